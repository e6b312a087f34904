// File ▸ Open Database…: the dialog turns its fields into the sources the loader opens, and refuses fields that
// make none with a message in the dialog (the table itself is read in tst_clickhouse against a real server).
#include "capture_loader.h"
#include "database_dialog.h"
#include "model/diagnostics.h"

#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

using prism::ui::DatabaseDialog;

class TestGuiDatabase : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    static void fill(DatabaseDialog& d, const QString& url, const QString& topology, const QString& from,
                     const QString& to) {
        d.findChild<QLineEdit*>("databaseUrl")->setText(url);
        d.findChild<QLineEdit*>("databaseTopology")->setText(topology);
        d.findChild<QLineEdit*>("databaseFrom")->setText(from);
        d.findChild<QLineEdit*>("databaseTo")->setText(to);
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("llmprism-test-database");
        QSettings().clear();
        QFile f(m_dir.filePath("topology.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"hosts\": []}");
    }

    void fieldsBecomeTheSources() {
        DatabaseDialog d;
        const QString topo = m_dir.filePath("topology.json");
        fill(d, " clickhouse://db:8123/net.flows ", topo, "2024-01-02 03:04:05", "1704164700000000000");
        QString why;
        const QStringList s = d.sources(&why);
        QVERIFY2(!s.isEmpty(), qPrintable(why));
        QCOMPARE(s.value(0), QString("clickhouse://db:8123/net.flows?from=1704164645000000000&to=1704164700000000000"));
        QCOMPARE(s.value(1), topo);
        fill(d, "clickhouse://db/net.flows", "", "", "");
        QCOMPARE(d.sources(), QStringList{"clickhouse://db/net.flows"});
    }

    void badFieldsAreRefusedInTheDialog_data() {
        QTest::addColumn<QString>("url");
        QTest::addColumn<QString>("topology");
        QTest::addColumn<QString>("from");
        QTest::addColumn<QString>("message");
        QTest::newRow("empty") << "" << "" << "" << "Give the table";
        QTest::newRow("no table") << "clickhouse://db:8123/flows" << "" << "" << "no table";
        QTest::newRow("not a time") << "clickhouse://db/a.b" << "" << "yesterday" << "\"yesterday\" is not a time";
        QTest::newRow("no topology") << "clickhouse://db/a.b" << "/nonexistent/topology.json" << ""
                                     << "No topology file";
    }
    void badFieldsAreRefusedInTheDialog() {
        QFETCH(QString, url);
        QFETCH(QString, topology);
        QFETCH(QString, from);
        QFETCH(QString, message);
        DatabaseDialog d;
        fill(d, url, topology, from, "");
        QVERIFY(d.sources().isEmpty());
        d.show();
        d.accept(); // stays open, saying why
        QVERIFY(d.isVisible());
        QCOMPARE(d.result(), int(QDialog::Rejected));
        auto* error = d.findChild<QLabel*>("databaseError");
        QVERIFY2(error->isVisible() && error->text().contains(message), qPrintable(error->text()));
    }

    void anAcceptedTableIsRememberedForNextTime() {
        {
            DatabaseDialog d;
            fill(d, "clickhouse://ops@db:9000/a.b", "", "", "");
            d.accept();
            QCOMPARE(d.result(), int(QDialog::Accepted));
        }
        DatabaseDialog again;
        QCOMPARE(again.findChild<QLineEdit*>("databaseUrl")->text(), QString("clickhouse://ops@db:9000/a.b"));
    }
};

QTEST_MAIN(TestGuiDatabase)
#include "tst_gui_database.moc"
