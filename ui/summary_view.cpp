#include "summary_view.h"

#include "analysis/stats.h"

#include "model/units.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

namespace prism::ui {

static QString q(const std::string& s) { return QString::fromStdString(s); }

SummaryView::SummaryView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 12, 16, 12);
    m_title = new QLabel(this);
    QFont tf = m_title->font();
    tf.setPointSizeF(tf.pointSizeF() * 1.4);
    tf.setBold(true);
    m_title->setFont(tf);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_title);

    m_placeholder = new QLabel(tr("Open a capture folder (flows.csv + topology.json) with File ▸ Open, "
                                  "or drop it on this window."),
                               this);
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_placeholder->setWordWrap(true);
    layout->addWidget(m_placeholder, 1);

    m_form = new QFormLayout;
    m_form->setLabelAlignment(Qt::AlignRight);
    m_form->setHorizontalSpacing(16);
    for (const char* label : {"Flows file", "Topology", "Records", "RoCE", "Other traffic", "Hosts", "Endpoints",
                              "Time span", "Input problems"})
        addField(tr(label));
    layout->addLayout(m_form);

    auto* jobsLabel = new QLabel(tr("Jobs"), this);
    QFont bf = jobsLabel->font();
    bf.setBold(true);
    jobsLabel->setFont(bf);
    layout->addSpacing(8);
    layout->addWidget(jobsLabel);
    m_jobs = new QTableWidget(0, 8, this);
    m_jobs->setHorizontalHeaderLabels(
        {tr("Job"), tr("GPUs"), tr("Hosts"), tr("TP × PP × DP"), tr("Steps"), tr("Median step"), tr("Findings"),
         tr("Time span")});
    m_jobs->verticalHeader()->hide();
    m_jobs->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_jobs->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_jobs->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_jobs, 1);
    clear();
}

QLabel* SummaryView::addField(const QString& label) {
    auto* value = new QLabel(this);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setWordWrap(true);
    m_form->addRow(label + ":", value);
    m_fields.append({label, value});
    return value;
}

QString SummaryView::fieldText(const QString& label) const {
    for (const auto& [name, w] : m_fields)
        if (name == label) return w->text();
    return {};
}

void SummaryView::clear() {
    m_title->setText(tr("No capture loaded"));
    for (auto& f : m_fields) f.second->clear();
    m_jobs->setRowCount(0);
    m_placeholder->show();
    for (int i = 0; i < m_form->rowCount(); ++i) m_form->setRowVisible(i, false);
}

void SummaryView::setSession(const SessionPtr& session) {
    if (!session || !session->report().capture) {
        clear();
        return;
    }
    const CaptureSummary& s = *session->report().capture;
    const Capture& c = session->capture;
    m_placeholder->hide();
    for (int i = 0; i < m_form->rowCount(); ++i) m_form->setRowVisible(i, true);
    m_title->setText(QFileInfo(session->source).fileName().isEmpty() ? session->source
                                                                    : QFileInfo(session->source).fileName());
    m_title->setToolTip(session->source);
    auto set = [this](const char* label, const QString& text) {
        for (auto& f : m_fields)
            if (f.first == tr(label)) f.second->setText(text);
    };
    // Each flow file with what it was read as (kind, time zone of local stamps, packet flow timeouts).
    QStringList flows;
    for (std::size_t k = 0; k < c.flowsPaths.size() && k < c.flowsKinds.size(); ++k)
        flows << tr("%1 (%2)").arg(q(c.flowsPaths[k]), q(c.flowsKinds[k]));
    set("Flows file", flows.isEmpty() ? q(c.flowsPath) : flows.join('\n'));
    set("Topology", c.hasTopology ? q(c.topologyPath) : tr("none — each NIC is treated as its own host"));
    set("Records", q(formatCount(s.records)));
    set("RoCE", tr("%1 records, %2").arg(q(formatCount(s.roceRecords)), q(formatBytes(s.roceBytes))));
    set("Other traffic", tr("%1 records, %2 (storage, management…)")
                             .arg(q(formatCount(s.otherRecords)), q(formatBytes(s.otherBytes))));
    set("Hosts", tr("%1 hosts, %2 NICs").arg(s.hosts).arg(s.nics));
    QString ep = tr("%1 distinct addresses").arg(s.endpoints);
    if (s.unknownRoceEndpoints) ep += tr(", %1 RoCE endpoints not in the topology").arg(s.unknownRoceEndpoints);
    set("Endpoints", ep);
    set("Time span", s.records ? tr("%1, lasting %2").arg(q(formatTimestamp(s.firstNs)),
                                                          q(formatDuration(s.lastNs - s.firstNs)))
                               : tr("empty capture"));
    set("Input problems", s.skippedRows || s.warnings
                              ? tr("%1 skipped, %2 (see the Input problems panel)")
                                    .arg(q(formatCounted(s.skippedRows, "row")), q(formatCounted(s.warnings, "warning")))
                              : tr("none"));

    const auto& jobs = session->report().jobs;
    m_jobs->setRowCount(int(jobs.size()));
    for (int r = 0; r < int(jobs.size()); ++r) {
        const JobInfo& j = jobs[r];
        std::vector<std::int64_t> d;
        for (const auto& st : j.steps) d.push_back(st.durationNs());
        const QString median = d.empty() ? QString("–") : q(formatDuration(upperMedian(std::move(d))));
        QStringList cells{q(j.id),
                          QString::number(j.gpuTotal()),
                          QString::number(j.hosts.size()),
                          QString("%1 × %2 × %3").arg(j.tp).arg(j.pp).arg(j.dp),
                          QString::number(j.steps.size()),
                          median,
                          QString::number(j.findings.size()),
                          j.endNs > j.startNs ? q(formatDuration(j.endNs - j.startNs)) : QString("–")};
        for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            if (col > 0 && col < 7) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_jobs->setItem(r, col, item);
        }
    }
    m_jobs->resizeColumnsToContents();
}

} // namespace prism::ui
