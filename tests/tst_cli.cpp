// llmprism-cli end to end: simulate -> analyze -> evaluate, help texts, exit codes, errors.
#include "test_util.h"

#include "store/notes.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

using Run = prism::test::CliRun;
static const auto cli = prism::test::runCli;

// The CLI as a user who is not root (root reads every file whatever its mode): as nobody, through setpriv,
// when the test runs as root.
static Run cliAsUser(const QStringList& args) {
    if (::geteuid() != 0) return cli(args);
    QProcess p;
    p.start("setpriv", QStringList{"--reuid=65534", "--regid=65534", "--clear-groups", LLMPRISM_CLI} + args);
    p.waitForFinished(300000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

static QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

class TestCli : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // simulate --repeat: N files back to back; as restarts, N times the jobs (each a restart of the one before);
    // as one run, the same jobs N times longer. Then --memory analyses it in stages with the same report.
    void repeatedCapturesAreRestartsOrOneRun() {
        const QString restarts = m_dir.filePath("repeat-restarts"), run = m_dir.filePath("repeat-run");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--repeat", "3", "--repeat-as", "restarts", "--out", restarts}).code, 0);
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--repeat", "3", "--out", run}).code, 0);
        QVERIFY(QFile::exists(restarts + "/flows-2.csv") && !QFile::exists(restarts + "/flows-3.csv"));
        Run r = cli({"analyze", restarts, "--json", restarts + "/whole.json"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("Jobs       3") && r.out.contains("restart of job-1"), qPrintable(r.out));
        r = cli({"analyze", run});
        QVERIFY2(r.out.contains("Jobs       1"), qPrintable(r.out));
        r = cli({"analyze", restarts, "--memory", "64M", "--json", restarts + "/staged.json"});
        QVERIFY2(r.code == 0 && r.out.contains("in stages within 64.0 MiB"), qPrintable(r.out + r.err));
        QJsonObject a = QJsonDocument::fromJson(readAll(restarts + "/whole.json")).object();
        QJsonObject b = QJsonDocument::fromJson(readAll(restarts + "/staged.json")).object();
        QCOMPARE(a["jobs"], b["jobs"]);
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--repeat", "0", "--out", run}).code, 2);
        QCOMPARE(cli({"analyze", restarts, "--memory", "lots"}).code, 2);
    }

    // The summary counts in words ("1 step", "3 findings") with each job's median step; warnings go to stderr;
    // a capture without jobs says why, and a --from/--to window with no records is an error (exit 1).
    void theSummaryReadsAsATicketWould() {
        const QString dir = m_dir.filePath("summary");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--out", dir}).code, 0);
        Run r = cli({"analyze", dir});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains(" steps (median ") && r.out.contains("0 rows skipped, 0 warnings"), qPrintable(r.out));
        QVERIFY(!r.out.contains("1 findings") && !r.out.contains("1 hosts"));
        const QString moe = m_dir.filePath("summary-moe"); // the job's notes: expert parallelism is said
        QCOMPARE(cli({"simulate", "--preset", "moe", "--out", moe}).code, 0);
        r = cli({"analyze", moe});
        QVERIFY2(r.out.contains("    note: expert all-to-all") || r.out.contains("(expert-parallel all-to-all)"),
                 qPrintable(r.out));

        // A topology that does not fit is said first, with what it leads to and the fix, and the warnings list
        // ends with how many it leaves out: another cluster's topology, then none.
        QFile topo(dir + "/topology.json");
        QVERIFY(topo.open(QIODevice::WriteOnly | QIODevice::Truncate));
        topo.write(R"({"hosts": [{"name": "elsewhere-1", "nics": [{"ip": "192.168.7.1", "gpu": 0}]}]})");
        topo.close();
        r = cli({"analyze", dir});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("\n  ! ") && r.out.contains("RoCE endpoints are not NICs of the topology") &&
                     r.out.contains("separate jobs") && r.out.contains("--topology FILE"),
                 qPrintable(r.out));
        QVERIFY2(QRegularExpression("warning: … and \\d+ more warnings\n$").match(r.err).hasMatch(),
                 qPrintable(r.err));

        QFile::remove(dir + "/topology.json"); // a warning: no topology
        r = cli({"analyze", dir});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.contains("no topology") && !r.out.contains("no topology"), qPrintable(r.out + r.err));
        QVERIFY(r.out.contains("1 warning (on stderr)"));
        QVERIFY2(r.out.contains("\n  ! No topology for the "), qPrintable(r.out));

        r = cli({"analyze", dir, "--from", "1990-01-01T00:00:00Z", "--to", "1990-01-02T00:00:00Z"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.out.contains("window lies outside the capture") && r.err.contains("no records between"),
                 qPrintable(r.out + r.err));

        const QString other = m_dir.filePath("no-roce");
        QVERIFY(QDir().mkpath(other));
        QFile f(other + "/flows.csv");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes\n1,2,10.0.0.1,10.0.0.2,1,443,6,5\n");
        f.close();
        r = cli({"analyze", other});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("no RoCE traffic (UDP port 4791)"), qPrintable(r.out));
    }

    // A usage error is its line, the synopsis and where the options are, not the whole help; convert makes the
    // folder of its --out as simulate does, and a write that fails says why.
    void usageErrorsAreShortAndOutputFoldersAreMade() {
        Run r = cli({"analyze", "--bogus", "x"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("llmprism-cli: unknown option --bogus") && r.err.contains("Usage: llmprism-cli analyze") &&
                     r.err.contains("Run 'llmprism-cli analyze --help' for every option.") && r.err.count('\n') < 10,
                 qPrintable(r.err));
        const QString dir = m_dir.filePath("convert-src"), out = m_dir.filePath("new/deeper/flows.csv");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--out", dir}).code, 0);
        r = cli({"convert", dir, "--out", out});
        QVERIFY2(r.code == 0 && QFile::exists(out), qPrintable(r.out + r.err));
        QFile blocker(m_dir.filePath("a-file"));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        r = cli({"convert", dir, "--out", m_dir.filePath("a-file/flows.csv")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("cannot make its folder") && r.err.contains("a-file"), qPrintable(r.err));
    }

    // A file or folder the user may not read is said as such, not as missing data; an output that cannot be
    // written says why, a session's too (SQLite says only "unable to open database file").
    void permissionsAreSaidAsSuch() {
        QTemporaryDir tmp; // its own, readable by others: the CLI may run as another user
        QVERIFY(tmp.isValid());
        const auto open = QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                          QFileDevice::ReadGroup | QFileDevice::ExeGroup | QFileDevice::ReadOther |
                          QFileDevice::ExeOther;
        QVERIFY(QFile::setPermissions(tmp.path(), open));
        const QString cap = tmp.filePath("cap"), flows = cap + "/flows.csv", topo = cap + "/topology.json";
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--out", cap}).code, 0);
        QVERIFY(QFile::setPermissions(cap, open));
        if (cliAsUser({"--help"}).code != 0) QSKIP("the CLI cannot run as another user here (setpriv, or its folder)");
        const auto none = QFileDevice::Permissions();
        QVERIFY(QFile::setPermissions(flows, none));
        Run r = cliAsUser({"analyze", cap});
        QVERIFY2(r.code == 1 && r.err.contains(flows + ": cannot open the flows file: Permission denied") &&
                     !r.err.contains("no flows.csv"),
                 qPrintable(r.err));
        QVERIFY(
            QFile::setPermissions(flows, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadOther));
        QVERIFY(QFile::setPermissions(topo, none));
        r = cliAsUser({"analyze", cap});
        QVERIFY2(r.code == 1 && r.err.contains(topo + ": cannot open the topology file: Permission denied"),
                 qPrintable(r.err));
        QVERIFY(QFile::setPermissions(topo, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadOther));
        QVERIFY(QFile::setPermissions(cap, none));
        r = cliAsUser({"analyze", cap});
        QVERIFY2(r.code == 1 && r.err.contains(cap + ": cannot list the folder: Permission denied"), qPrintable(r.err));
        QVERIFY(QFile::setPermissions(cap, open));
        const QString readOnly = tmp.filePath("read-only");
        QVERIFY(QDir().mkpath(readOnly));
        QVERIFY(QFile::setPermissions(readOnly, open & ~(QFileDevice::WriteOwner)));
        r = cliAsUser({"analyze", cap, "--json", readOnly + "/report.json"});
        QVERIFY2(r.code == 1 && r.err.contains("cannot open for writing (Permission denied)"), qPrintable(r.err));
        r = cliAsUser({"import", cap, "--out", readOnly + "/s.prism"});
        QVERIFY2(r.code == 1 && r.err.contains("cannot write the session in " + readOnly + " (Permission denied)"),
                 qPrintable(r.err));
        QVERIFY(QFile::setPermissions(readOnly, open));
    }

    void everyCommandHasHelp_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("main") << QStringList{"--help"} << "Commands:";
        QTest::newRow("simulate") << QStringList{"simulate", "--help"} << "--preset NAME";
        QTest::newRow("analyze") << QStringList{"analyze", "--help"} << "--csv-steps";
        QTest::newRow("evaluate") << QStringList{"evaluate", "--help"} << "--expect-perfect";
        QTest::newRow("convert") << QStringList{"convert", "--help"} << "--tz ZONE";
        QTest::newRow("export-clickhouse") << QStringList{"export-clickhouse", "--help"} << "--url URL";
        QTest::newRow("import") << QStringList{"import", "--help"} << "--out SESSION.prism";
        QTest::newRow("topology") << QStringList{"topology", "--help"} << "ip,host[,switch[,gpus]]";
    }
    void everyCommandHasHelp() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        Run r = cli(args);
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains(expected));
        QVERIFY(r.out.contains("Usage:"));
    }

    void badCommandLinesExitWithCodeTwo_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no command") << QStringList{} << "Usage:";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command";
        QTest::newRow("unknown option") << QStringList{"analyze", "x", "--bogus"} << "unknown option --bogus";
        QTest::newRow("no preset") << QStringList{"simulate", "--out", "x"} << "expected --preset NAME, --from-trace TRACE or --random N";
        QTest::newRow("unknown preset") << QStringList{"simulate", "--preset", "huge", "--out", "x"}
                                        << "expected one of: tiny";
        QTest::newRow("bad seed") << QStringList{"simulate", "--preset", "tiny", "--seed", "-4", "--out", "x"}
                                  << "--seed expects a non-negative integer";
        QTest::newRow("missing value") << QStringList{"evaluate", "--report"} << "needs a value";
        QTest::newRow("missing last value") << QStringList{"analyze", "x", "--json"} << "option --json needs a value";
        QTest::newRow("unknown option, no positionals")
            << QStringList{"simulate", "--preset", "tiny", "--out", "never-written", "--frobnicate"}
            << "unknown option --frobnicate";
        QTest::newRow("unexpected argument") << QStringList{"evaluate", "--report", "r", "--truth", "t", "stray"}
                                             << "unexpected argument stray";
        auto sim = [](std::initializer_list<QString> extra) {
            QStringList args{"simulate", "--preset", "tiny", "--out", "never-written"};
            for (const QString& e : extra) args << e;
            return args;
        };
        QTest::newRow("anomaly kind") << sim({"--anomaly", "slow_jam:steps=3"}) << "unknown kind \"slow_jam\"";
        QTest::newRow("one spec per --anomaly") << sim({"--anomaly", "slow_rank:steps=3", "stray"})
                                                << "unexpected argument stray";
        QTest::newRow("anomaly without steps") << sim({"--anomaly", "slow_rank:factor=2"})
                                               << "steps=FIRST-LAST is required";
        QTest::newRow("anomaly outside the job") << sim({"--anomaly", "slow_rank:steps=15-40"})
                                                 << "are not inside the job's 20 steps";
        QTest::newRow("anomaly host") << sim({"--anomaly", "slow_link:steps=3,host=node-0009"})
                                      << "host node-0009 is not in the preset's cluster of 4 hosts";
        QTest::newRow("anomaly key") << sim({"--anomaly", "slow_rank:steps=3,speed=2"}) << "unknown key \"speed\"";
        QTest::newRow("anomaly factor") << sim({"--anomaly", "slow_rank:steps=3,factor=-1"})
                                        << "factor expects a positive number";
        QTest::newRow("pause without value") << sim({"--anomaly", "slow_step:steps=4"}) << "pause_ms is required";
        QTest::newRow("channels") << sim({"--channels", "0"}) << "--channels expects a positive integer";
        QTest::newRow("loss") << sim({"--loss", "1"}) << "--loss expects a fraction in [0, 1)";
        QTest::newRow("no capture") << QStringList{"analyze"} << "expected a CAPTURE";
        QTest::newRow("session and more") << QStringList{"analyze", "a.prism", "b"} << "a session file is analysed alone";
        QTest::newRow("unknown zone") << QStringList{"analyze", "x", "--tz", "Mars/Olympus"}
                                      << "--tz: unknown time zone \"Mars/Olympus\"";
        QTest::newRow("bad offset") << QStringList{"convert", "x", "--tz", "+25:00", "--out", "never-written"}
                                    << "--tz: unknown time zone \"+25:00\"";
        QTest::newRow("convert without out") << QStringList{"convert", "x"} << "--out is required";
    }
    void badCommandLinesExitWithCodeTwo() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        Run r = cli(args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QVERIFY(!QFile::exists("never-written")); // nothing is written on a bad command line
    }

    // --anomaly places anomalies on any preset (the seed picks the GPU when none is given), --clear-anomalies
    // drops the preset's own, --channels and --loss change the exporter: the truth lists them and the engine
    // finds them.
    void simulateTakesAnomaliesChannelsAndLoss() {
        const QString cap = m_dir.filePath("placed"), again = m_dir.filePath("placed-again");
        const QStringList args{"simulate", "--preset", "pp-anomalies", "--seed", "7", "--clear-anomalies",
                               "--anomaly", "slow_rank:steps=6-10,factor=1.5", "--anomaly",
                               "slow_link:job=job-a,host=node-0002,gpu=3,steps=14-18,factor=3", "--anomaly",
                               "slow_step:steps=22,pause_ms=120", "--channels", "1", "--loss", "0.02"};
        QCOMPARE(cli(QStringList(args) << "--out" << cap).code, 0);
        QCOMPARE(cli(QStringList(args) << "--out" << again).code, 0);
        QCOMPARE(readAll(cap + "/flows.csv"), readAll(again + "/flows.csv")); // the same options, the same files
        QJsonObject truth = QJsonDocument::fromJson(readAll(cap + "/truth.json")).object();
        QJsonArray anomalies = truth["jobs"].toArray()[0].toObject()["anomalies"].toArray();
        QCOMPARE(anomalies.size(), 3); // the preset's three were dropped
        QCOMPARE(anomalies[0].toObject()["kind"].toString(), QString("slow_rank"));
        QCOMPARE(anomalies[0].toObject()["first_step"].toInt(), 6);
        QCOMPARE(anomalies[1].toObject()["ip"].toString(), QString("10.3.0.2")); // rail 3 of node-0002
        QCOMPARE(anomalies[1].toObject()["factor"].toDouble(), 3.0);
        QCOMPARE(anomalies[2].toObject()["last_step"].toInt(), 22);

        QCOMPARE(cli({"analyze", cap, "--json", cap + "/report.json", "--quiet"}).code, 0);
        QCOMPARE(cli({"evaluate", "--report", cap + "/report.json", "--truth", cap + "/truth.json", "--json",
                      cap + "/eval.json"}).code, 0);
        QJsonObject findings = QJsonDocument::fromJson(readAll(cap + "/eval.json"))
                                   .object()["totals"].toObject()["findings"].toObject();
        QCOMPARE(findings["precision"].toDouble(), 1.0);
        QCOMPARE(findings["recall"].toDouble(), 1.0);

        // Without host or GPU the seed decides: another seed, another place for the same spec.
        QSet<QString> places;
        for (int seed = 1; seed <= 6; ++seed) {
            const QString dir = m_dir.filePath(QString("seeded-%1").arg(seed));
            QCOMPARE(cli({"simulate", "--preset", "tiny", "--seed", QString::number(seed), "--anomaly",
                          "slow_rank:steps=5-8", "--out", dir}).code, 0);
            QJsonObject t = QJsonDocument::fromJson(readAll(dir + "/truth.json")).object();
            places.insert(t["jobs"].toArray()[0].toObject()["anomalies"].toArray()[0].toObject()["ip"].toString());
        }
        QVERIFY2(places.size() >= 3, qPrintable(QStringList(places.values()).join(' ')));
    }

    void presetsAreListed() {
        Run r = cli({"simulate", "--list-presets"});
        QCOMPARE(r.code, 0);
        for (const char* p : {"tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies",
                              "reuse", "large"})
            QVERIFY2(r.out.split('\n').contains(p), p);
    }

    void simulateAnalyzeEvaluateRoundTrip() {
        const QString cap = m_dir.filePath("two-jobs");
        Run sim = cli({"simulate", "--preset", "two-jobs", "--seed", "4", "--out", cap});
        QCOMPARE(sim.code, 0);
        for (const char* f : {"flows.csv", "topology.json", "truth.json"}) QVERIFY(QFile::exists(cap + "/" + f));
        QByteArray flowsBefore = readAll(cap + "/flows.csv");

        Run an = cli({"analyze", cap, "--json", cap + "/report.json", "--csv-steps", cap + "/steps.csv"});
        QCOMPARE(an.code, 0);
        QVERIFY(an.out.contains("Records"));
        QVERIFY(an.out.contains("job-0:"));
        QVERIFY(an.out.contains("job-1:"));
        QCOMPARE(readAll(cap + "/flows.csv"), flowsBefore); // inputs are never modified
        QJsonObject report = QJsonDocument::fromJson(readAll(cap + "/report.json")).object();
        QCOMPARE(report["format"].toString(), QString("llmprism-report"));
        QCOMPARE(report["jobs"].toArray().size(), 2);
        QVERIFY(readAll(cap + "/steps.csv").startsWith("job,index,start_ns,end_ns,duration_ns,slow\n"));

        Run ev = cli({"evaluate", "--report", cap + "/report.json", "--truth", cap + "/truth.json", "--json",
                      cap + "/eval.json"});
        QCOMPARE(ev.code, 0);
        QJsonObject e = QJsonDocument::fromJson(readAll(cap + "/eval.json")).object();
        QJsonObject jobs = e["totals"].toObject()["jobs"].toObject();
        QCOMPARE(jobs["precision"].toDouble(), 1.0);
        QCOMPARE(jobs["recall"].toDouble(), 1.0);
    }

    // A session is taken wherever a capture is (convert writes its flows), and --topology goes with a lone flow
    // file wherever one is taken (compare included).
    void aSessionIsTakenWhereverACaptureIs() {
        const QString cap = m_dir.filePath("session-source"), prism = m_dir.filePath("session-source.prism");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--seed", "3", "--out", cap}).code, 0);
        QCOMPARE(cli({"import", cap, "--out", prism, "--quiet"}).code, 0);
        const QString flows = m_dir.filePath("from-session.csv");
        Run conv = cli({"convert", prism, "--out", flows});
        QVERIFY2(conv.code == 0, qPrintable(conv.err));
        QVERIFY(readAll(flows).contains("(session; its capture was"));
        // The flows written from the session analyse as the capture does (with its topology named).
        QCOMPARE(cli({"analyze", cap, "--quiet", "--json", cap + "/a.json"}).code, 0);
        QCOMPARE(
            cli({"analyze", flows, "--topology", cap + "/topology.json", "--quiet", "--json", cap + "/b.json"}).code,
            0);
        QJsonObject a = QJsonDocument::fromJson(readAll(cap + "/a.json")).object();
        QJsonObject b = QJsonDocument::fromJson(readAll(cap + "/b.json")).object();
        QCOMPARE(a["jobs"], b["jobs"]);
        // analyze of a session lists its notes: where, by whom, what.
        prism::Note note;
        note.target = prism::NoteTarget::Step;
        note.jobId = "job-0";
        note.step = 2;
        note.text = "step 2 ran long: ticket 4711";
        note.author = "support";
        prism::addNote(prism.toStdString(), note);
        Run listed = cli({"analyze", prism});
        QVERIFY2(listed.code == 0 && listed.out.contains("1 note)") &&
                     listed.out.contains("note     [job-0 step 2] support: step 2 ran long: ticket 4711"),
                 qPrintable(listed.out + listed.err));
        // A session is given alone.
        Run two = cli({"convert", prism, cap + "/flows.csv", "--out", flows});
        QCOMPARE(two.code, 2);
        QVERIFY2(two.err.contains("a session file is given alone"), qPrintable(two.err));
        // compare: a lone flow file with --topology against the session: the same run, its jobs matched by GPUs.
        Run cmp = cli({"compare", flows, prism, "--topology", cap + "/topology.json", "--json", cap + "/cmp.json"});
        QVERIFY2(cmp.code == 0, qPrintable(cmp.err));
        const QJsonObject c = QJsonDocument::fromJson(readAll(cap + "/cmp.json")).object();
        QCOMPARE(c["jobs"].toArray().size(), a["jobs"].toArray().size());
        for (const auto& j : c["jobs"].toArray()) QCOMPARE(j.toObject()["matched_by"].toString(), QString("gpus"));
    }

    void aGzipCaptureAnalyzesLikeThePlainOne() {
        const QString plain = m_dir.filePath("plain"), gz = m_dir.filePath("gz");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--out", plain}).code, 0);
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--gzip", "--out", gz}).code, 0);
        QVERIFY(QFile::exists(gz + "/flows.csv.gz"));
        Run a = cli({"analyze", plain, "--json", plain + "/r.json"});
        Run b = cli({"analyze", gz, "--json", gz + "/r.json"});
        QCOMPARE(a.code, 0);
        QCOMPARE(b.code, 0);
        QJsonObject ra = QJsonDocument::fromJson(readAll(plain + "/r.json")).object();
        QJsonObject rb = QJsonDocument::fromJson(readAll(gz + "/r.json")).object();
        QCOMPARE(ra["jobs"], rb["jobs"]);
    }

    // A hostfile with addresses (ip,host,switch,gpus) given as --topology is the topology: the same jobs,
    // shapes, steps and findings as with the topology.json it was written from (two-jobs: 2 jobs, 8-GPU hosts).
    void aHostfileTopologyGivesTheSameReport() {
        const QString dir = m_dir.filePath("hostfile");
        QCOMPARE(cli({"simulate", "--preset", "two-jobs", "--out", dir}).code, 0);
        const QJsonObject topo = QJsonDocument::fromJson(readAll(dir + "/topology.json")).object();
        QString csv = "# from topology.json\nip,host,switch,gpus\n";
        for (const auto& h : topo["hosts"].toArray())
            for (const auto& n : h.toObject()["nics"].toArray()) {
                const QJsonObject nic = n.toObject();
                QStringList gpus;
                if (nic.contains("gpus"))
                    for (const auto& g : nic["gpus"].toArray()) gpus << QString::number(g.toInt());
                else gpus << QString::number(nic["gpu"].toInt());
                csv += QString("%1,%2,%3,%4\n")
                           .arg(nic["ip"].toString(), h.toObject()["name"].toString(), nic["switch"].toString(),
                                gpus.join(';'));
            }
        QFile f(m_dir.filePath("hosts.csv"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(csv.toUtf8());
        f.close();
        QVERIFY(QFile::rename(dir + "/topology.json", m_dir.filePath("topology.json")));
        Run a = cli({"analyze", dir, "--topology", m_dir.filePath("topology.json"), "--json", dir + "/a.json"});
        Run b = cli({"analyze", dir, "--topology", m_dir.filePath("hosts.csv"), "--json", dir + "/b.json"});
        QCOMPARE(a.code, 0);
        QCOMPARE(b.code, 0);
        const QJsonArray ja = QJsonDocument::fromJson(readAll(dir + "/a.json")).object()["jobs"].toArray();
        const QJsonArray jb = QJsonDocument::fromJson(readAll(dir + "/b.json")).object()["jobs"].toArray();
        QCOMPARE(ja.size(), 2);
        QCOMPARE(ja, jb);
        QVERIFY2(!b.out.contains("  ! "), qPrintable(b.out));

        // `topology` writes it as our topology.json, which gives the same report again; two sources listing the
        // same hosts are refused, naming both, and nothing is written.
        const QString written = m_dir.filePath("written/topology.json");
        Run t = cli({"topology", m_dir.filePath("hosts.csv"), "--out", written});
        QCOMPARE(t.code, 0);
        QVERIFY2(t.out.contains("wrote ") && t.out.contains(" hosts, ") && t.out.contains(" NICs, "), qPrintable(t.out));
        Run c = cli({"analyze", dir, "--topology", written, "--json", dir + "/c.json"});
        QCOMPARE(c.code, 0);
        QCOMPARE(QJsonDocument::fromJson(readAll(dir + "/c.json")).object()["jobs"].toArray(), ja);
        const QString twice = m_dir.filePath("twice.json");
        t = cli({"topology", m_dir.filePath("hosts.csv"), m_dir.filePath("topology.json"), "--out", twice});
        QCOMPARE(t.code, 1);
        QVERIFY2(t.err.contains("hosts.csv") && t.err.contains("topology.json") && t.err.contains(" too"),
                 qPrintable(t.err));
        QVERIFY(!QFile::exists(twice));
    }

    void badInputExitsWithCodeOneAndNamesTheProblem() {
        Run missing = cli({"analyze", m_dir.filePath("nowhere")});
        QCOMPARE(missing.code, 1);
        QVERIFY(missing.err.contains("nowhere"));

        const QString bad = m_dir.filePath("bad");
        QVERIFY(QDir().mkpath(bad));
        QFile f(bad + "/flows.csv");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes\n1,2,10.0.0.1,10.0.0.2,1,4791,17,5\n"
                "3,4,10.0.0.1,10.0.0.999,1,4791,17,5\n");
        f.close();
        Run lenient = cli({"analyze", bad});
        QCOMPARE(lenient.code, 0);
        QVERIFY(lenient.out.contains("1 row skipped"));
        Run strict = cli({"analyze", bad, "--strict"});
        QCOMPARE(strict.code, 1);
        QVERIFY2(strict.err.contains("flows.csv:3:4"), qPrintable(strict.err));
        QVERIFY(strict.err.contains("10.0.0.999"));

        Run ev = cli({"evaluate", "--report", bad + "/flows.csv", "--truth", bad + "/flows.csv"});
        QCOMPARE(ev.code, 1);
        QVERIFY(ev.err.contains("flows.csv"));
    }

    void expectPerfectFailsWithCodeThreeOnAWrongReport() {
        const QString cap = m_dir.filePath("tiny-perfect");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--out", cap}).code, 0);
        // The truth scored against itself is perfect; a report without jobs is not.
        QCOMPARE(cli({"evaluate", "--report", cap + "/truth.json", "--truth", cap + "/truth.json",
                      "--expect-perfect"}).code, 0);
        QFile f(cap + "/empty.json");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"format":"llmprism-report","version":1,"jobs":[]})");
        f.close();
        Run r = cli({"evaluate", "--report", cap + "/empty.json", "--truth", cap + "/truth.json", "--expect-perfect"});
        QCOMPARE(r.code, 3);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
