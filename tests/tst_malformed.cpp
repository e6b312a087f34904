// The corpus of malformed inputs (tests/data/malformed): every file through llmprism-cli gives exactly the message
// its manifest row names — the file, the line and column where known, what was found and what was expected.
#include <QCryptographicHash>
#include <QDir>
#include <QMap>
#include <QFile>
#include <QProcess>
#include <QtTest>

class TestMalformed : public QObject {
    Q_OBJECT
    QMap<QString, QByteArray> m_before; // file -> SHA-256, before any run

    static QMap<QString, QByteArray> hashes() {
        QMap<QString, QByteArray> out;
        const QString dir = QString(LLMPRISM_TEST_DATA) + "/malformed";
        for (const QString& name : QDir(dir).entryList(QDir::Files)) {
            QFile f(dir + "/" + name);
            if (f.open(QIODevice::ReadOnly))
                out[name] = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
        }
        return out;
    }

private slots:
    void initTestCase() { m_before = hashes(); }

    void everyMalformedInputGivesItsMessage_data() {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("expected");
        const QString dir = QString(LLMPRISM_TEST_DATA) + "/malformed";
        QFile manifest(dir + "/MANIFEST.tsv");
        QVERIFY(manifest.open(QIODevice::ReadOnly | QIODevice::Text));
        int rows = 0, files = 0;
        while (!manifest.atEnd()) {
            const QString line = QString::fromUtf8(manifest.readLine()).chopped(1);
            if (line.isEmpty() || line.startsWith('#')) continue;
            const QStringList f = line.split('\t');
            QCOMPARE(f.size(), 3);
            QString args = f[1];
            args.replace("{data}", LLMPRISM_TEST_DATA).replace("{}", dir + "/" + f[0]);
            if (f[1].contains("{}")) {
                QVERIFY2(QFile::exists(dir + "/" + f[0]), qPrintable(f[0]));
                ++files;
            }
            QTest::newRow(qPrintable(f[0])) << args << f[2];
            ++rows;
        }
        QVERIFY2(files >= 30, "the corpus holds at least 30 malformed files");
        // Every file of the folder has its row.
        const QStringList present = QDir(dir).entryList(QDir::Files);
        QCOMPARE(present.size() - 2 /* MANIFEST.tsv, README.md */, files);
    }

    void everyMalformedInputGivesItsMessage() {
        QFETCH(QString, args);
        QFETCH(QString, expected);
        QProcess p;
        p.start(LLMPRISM_CLI, args.split(' '));
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit); // never a crash
        const QString prefix = QString(LLMPRISM_TEST_DATA) + "/malformed/";
        QString got;
        if (p.exitCode() != 0) {
            QCOMPARE(p.exitCode(), 1); // bad input, not a bad command line
            got = QString::fromUtf8(p.readAllStandardError()).section('\n', 0, 0);
        } else {
            for (const QString& l : QString::fromUtf8(p.readAllStandardError()).split('\n')) // the input's messages
                if (l.trimmed().startsWith("error:")) {
                    got = l.trimmed();
                    break;
                }
        }
        QCOMPARE(got.replace(prefix, QString()), expected);
    }

    // Inputs are only read: the corpus is byte for byte what it was before the runs, nothing added to it.
    void theCorpusIsNeverWritten() { QCOMPARE(hashes(), m_before); }
};

QTEST_GUILESS_MAIN(TestMalformed)
#include "tst_malformed.moc"
