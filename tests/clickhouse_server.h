#pragma once
// A real ClickHouse server for tests (Debian's clickhouse-server): on a loopback port, in a folder of the test's,
// stopped by stop() (and by `timeout` after 15 minutes at the latest, even when the test is killed). Used by
// tst_clickhouse and tst_gui_staged; a test skips, with `skip` as its message, where none can be started.
#include "io/clickhouse.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QThread>

#include <string>
#include <unistd.h>

namespace prism::test {

class ClickHouseServer {
public:
    int port = 0;
    QString skip; // why there is no server

    bool running() const { return port && m_server.state() == QProcess::Running; }
    std::string url(const std::string& table) const {
        return "clickhouse://127.0.0.1:" + std::to_string(port) + "/" + table;
    }

    // Starts a server with its data under `dir`; false (and `skip` says why) when none starts.
    bool start(const QString& dir) {
        const QString binary = "/usr/sbin/clickhouse-server";
        if (!QFile::exists(binary)) {
            skip = "clickhouse-server is not installed (apt-get install clickhouse-server)";
            return false;
        }
        for (int attempt = 0; attempt < 5; ++attempt) {
            port = 20000 + (int(getpid() + attempt * 3001) % 10000) * 2; // HTTP on it, TCP on the next
            const QString root = dir + "/server" + QString::number(attempt);
            QDir().mkpath(root + "/data");
            QDir().mkpath(root + "/tmp");
            QFile config(root + "/config.xml"), users(root + "/users.xml");
            if (!config.open(QIODevice::WriteOnly) || !users.open(QIODevice::WriteOnly)) break;
            config.write(QString("<?xml version=\"1.0\"?><yandex><logger><level>warning</level><console>1</console>"
                                 "</logger><http_port>%1</http_port><tcp_port>%2</tcp_port>"
                                 "<listen_host>127.0.0.1</listen_host><path>%3/data/</path><tmp_path>%3/tmp/</tmp_path>"
                                 "<users_config>users.xml</users_config><default_profile>default</default_profile>"
                                 "<default_database>default</default_database><mark_cache_size>5368709"
                                 "</mark_cache_size></yandex>")
                             .arg(port)
                             .arg(port + 1)
                             .arg(root)
                             .toUtf8());
            users.write("<?xml version=\"1.0\"?><yandex><profiles><default><max_memory_usage>2000000000"
                        "</max_memory_usage></default></profiles><users><default><password></password><networks>"
                        "<ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>"
                        "</users><quotas><default></default></quotas></yandex>");
            config.close();
            users.close();
            m_server.setProcessChannelMode(QProcess::MergedChannels);
            m_server.start("timeout", {"900", binary, "--config-file=" + root + "/config.xml"});
            if (!m_server.waitForStarted(10000)) continue;
            prism::ClickHouseClient client(prism::ClickHouseUrl::parse(url("default.x")));
            for (int i = 0; i < 150 && m_server.state() == QProcess::Running; ++i) {
                if (client.reachable()) return true;
                QThread::msleep(200);
            }
            m_server.kill();
            m_server.waitForFinished(5000);
            skip = "clickhouse-server did not start: " + QString::fromUtf8(m_server.readAll()).left(400);
        }
        port = 0;
        return false;
    }

    void stop() {
        if (m_server.state() == QProcess::Running) {
            m_server.terminate();
            if (!m_server.waitForFinished(10000)) m_server.kill();
        }
    }
    ~ClickHouseServer() { stop(); }

private:
    QProcess m_server;
};

} // namespace prism::test
