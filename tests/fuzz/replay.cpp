// Replays a fuzz harness's corpus in the ordinary test suite (tst_fuzz_<harness>, tests/CMakeLists.txt): every
// file of tests/fuzz/corpus/<harness> — the seeds and every input a fuzzing run found, minimized — through the
// harness's LLVMFuzzerTestOneInput, built with the compiler of the suite (and its sanitizers in
// scripts/test.sh --sanitize). A harness reports a broken promise with __builtin_trap(), so a regression
// fails the test as a crash; the file being replayed is printed first.
#include <QDir>
#include <QFile>
#include <QTest>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

class FuzzReplay : public QObject {
    Q_OBJECT
private slots:
    void replay_data() {
        QTest::addColumn<QString>("path");
        const QDir dir(QStringLiteral(LLMPRISM_FUZZ_CORPUS));
        const QStringList files = dir.entryList(QDir::Files, QDir::Name);
        QVERIFY2(files.size() >= 3, qPrintable("a corpus of at least 3 inputs in " + dir.path()));
        for (const QString& f : files) QTest::newRow(qPrintable(f)) << dir.filePath(f);
    }
    void replay() {
        QFETCH(QString, path);
        QFile f(path);
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(path));
        const QByteArray bytes = f.readAll();
        qInfo("replaying %s (%lld bytes)", qPrintable(path), static_cast<long long>(bytes.size()));
        QCOMPARE(LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.constData()),
                                        static_cast<std::size_t>(bytes.size())),
                 0);
    }
};

QTEST_GUILESS_MAIN(FuzzReplay)
#include "replay.moc"
