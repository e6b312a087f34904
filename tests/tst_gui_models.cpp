// The window's item models: the job and finding tables checked by QAbstractItemModelTester, their rows, and
// numeric sorting through QSortFilterProxyModel. A synthetic session, so that the numbers are known.
#include "list_models.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QtTest>

using namespace prism;
using namespace prism::ui;

namespace {

// A job with `steps` steps of 10 ms (one of 30 ms), the given findings and shape.
JobInfo job(const std::string& id, int steps, int gpus, std::vector<Finding> findings = {}) {
    JobInfo j;
    j.id = id;
    j.gpuCount = gpus;
    j.hosts.assign(std::size_t(std::max(1, gpus / 8)), "host");
    j.tp = 8;
    j.pp = 1;
    j.dp = std::max(1, gpus / 8);
    std::int64_t t = 0;
    for (int k = 0; k < steps; ++k) {
        const std::int64_t d = k == 1 ? 30'000'000 : 10'000'000;
        j.steps.push_back({k, t, t + d, k == 1});
        t += d;
    }
    j.startNs = 0;
    j.endNs = t;
    j.findings = std::move(findings);
    return j;
}

Finding finding(const std::string& kind, int first, int last, double score) {
    Finding f;
    f.kind = kind;
    f.firstStep = first;
    f.lastStep = last;
    f.score = score;
    f.message = kind + " message";
    return f;
}

// Text sorting would put "10" and "100" before "9": these jobs and findings tell numeric sorting apart.
SessionPtr session() {
    auto s = std::make_shared<AnalysisSession>();
    s->source = "synthetic";
    s->analysis.report.jobs = {job("job-0", 100, 16),
                               job("job-1", 9, 128,
                                   {finding("slow_step", 9, 9, 9.5), finding("slow_rank", 10, 12, 100.0),
                                    finding("slow_link", 100, 101, 10.25)}),
                               job("job-2", 10, 8)};
    s->analysis.report.jobs[2].restartOf = "job-0";
    s->analysis.jobs.resize(3);
    return s;
}

QStringList column(const QAbstractItemModel& m, int c) {
    QStringList out;
    for (int r = 0; r < m.rowCount(); ++r) out << m.index(r, c).data().toString();
    return out;
}

} // namespace

class TestModels : public QObject {
    Q_OBJECT

private slots:
    void theJobTableHasOneRowPerJobAndSortsNumbers() {
        JobTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(JobTableModel::SortRole);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(model.columnCount(), 7);

        const SessionPtr s = session();
        model.setSession(s);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.headerData(JobTableModel::MedianStep, Qt::Horizontal).toString(), QString("Median"));
        QCOMPARE(model.headerData(JobTableModel::MedianStep, Qt::Horizontal, Qt::ToolTipRole).toString(),
                 QString("Median step time"));
        QCOMPARE(column(model, JobTableModel::Job), QStringList({"job-0", "job-1", "job-2 (restart)"}));
        QCOMPARE(column(model, JobTableModel::Gpus), QStringList({"16", "128", "8"}));
        QCOMPARE(column(model, JobTableModel::Parallelism), QStringList({"8×1×2", "8×1×16", "8×1×1"}));
        QCOMPARE(column(model, JobTableModel::Steps), QStringList({"100", "9", "10"}));
        QCOMPARE(column(model, JobTableModel::Findings), QStringList({"0", "3", "0"}));
        QCOMPARE(model.index(1, JobTableModel::MedianStep).data().toString(), QString("10.00 ms"));
        QCOMPARE(model.index(1, JobTableModel::Job).data(JobTableModel::JobRole).toInt(), 1);
        QVERIFY(model.index(2, JobTableModel::Gpus).data(Qt::ToolTipRole).toString().contains("Restart of job-0"));
        QCOMPARE(model.index(1, JobTableModel::Steps).data(Qt::TextAlignmentRole).toInt(),
                 int(Qt::AlignRight | Qt::AlignVCenter));
        // Only a job with findings has its count in red.
        QVERIFY(model.index(1, JobTableModel::Findings).data(Qt::ForegroundRole).isValid());
        QVERIFY(!model.index(0, JobTableModel::Findings).data(Qt::ForegroundRole).isValid());

        // Numbers sort as numbers (text would give 10, 100, 9), the TP×PP×DP column as text.
        proxy.sort(JobTableModel::Steps, Qt::AscendingOrder);
        QCOMPARE(column(proxy, JobTableModel::Steps), QStringList({"9", "10", "100"}));
        proxy.sort(JobTableModel::Gpus, Qt::DescendingOrder);
        QCOMPARE(column(proxy, JobTableModel::Gpus), QStringList({"128", "16", "8"}));
        proxy.sort(JobTableModel::Parallelism, Qt::AscendingOrder);
        QCOMPARE(column(proxy, JobTableModel::Parallelism), QStringList({"8×1×1", "8×1×16", "8×1×2"}));
        proxy.sort(JobTableModel::Job, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, 0).data(JobTableModel::JobRole).toInt(), 2);

        model.setSession(nullptr);
        QCOMPARE(proxy.rowCount(), 0);
    }

    void theFindingTableListsAJobsFindingsAndSortsNumbers() {
        FindingTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(FindingTableModel::SortRole);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const SessionPtr s = session();

        model.setJob(std::make_shared<const JobData>(s, 1));
        QCOMPARE(model.rowCount(), 3);
        QVERIFY(!model.hasPlaceholder());
        QCOMPARE(column(model, FindingTableModel::Kind), QStringList({"slow step", "slow rank", "slow link"}));
        QCOMPARE(column(model, FindingTableModel::Steps), QStringList({"9", "10–12", "100–101"}));
        QCOMPARE(column(model, FindingTableModel::Score), QStringList({"9.50", "100.00", "10.25"}));
        QCOMPARE(model.index(2, FindingTableModel::Where).data(Qt::ToolTipRole).toString(),
                 QString("slow_link message"));
        QVERIFY(model.index(0, FindingTableModel::Kind).data(Qt::DecorationRole).isValid());
        QVERIFY(model.flags(model.index(0, 0)) & Qt::ItemIsSelectable);

        proxy.sort(FindingTableModel::Score, Qt::AscendingOrder);
        QCOMPARE(column(proxy, FindingTableModel::Score), QStringList({"9.50", "10.25", "100.00"}));
        QCOMPARE(proxy.index(2, 0).data(FindingTableModel::FindingRole).toInt(), 1);
        proxy.sort(FindingTableModel::Steps, Qt::DescendingOrder); // by the first step, as a number
        QCOMPARE(column(proxy, FindingTableModel::Steps), QStringList({"100–101", "10–12", "9"}));
        proxy.sort(FindingTableModel::Kind, Qt::AscendingOrder);
        QCOMPARE(column(proxy, FindingTableModel::Kind), QStringList({"slow link", "slow rank", "slow step"}));

        // A job without findings: one disabled row saying so, which is no finding.
        model.setJob(std::make_shared<const JobData>(s, 0));
        QVERIFY(model.hasPlaceholder());
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, 0).data().toString(), QString("No findings: nothing slow."));
        QCOMPARE(model.flags(model.index(0, 0)), Qt::NoItemFlags);
        QVERIFY(!model.index(0, 0).data(FindingTableModel::FindingRole).isValid());
        model.setJob(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_MAIN(TestModels)
#include "tst_gui_models.moc"
