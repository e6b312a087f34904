#include "list_models.h"

#include "analysis/stats.h"
#include "view_style.h"

#include <QApplication>
#include <QColor>
#include <QStyle>

namespace prism::ui {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
} // namespace

// ---- jobs -------------------------------------------------------------------------------------------------

JobTableModel::JobTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void JobTableModel::setSession(const SessionPtr& session) {
    beginResetModel();
    m_rows.clear();
    if (session) {
        // A capture analysed in stages lists every job whole (its staged entry), not the window shown.
        const auto& jobs = session->staged ? session->staged->report.jobs : session->report().jobs;
        for (const JobInfo& info : jobs) {
            std::vector<std::int64_t> d;
            for (const auto& st : info.steps) d.push_back(st.durationNs());
            const std::int64_t median = upperMedian(std::move(d));
            Row row;
            row.text = {info.restartOf.empty() ? q(info.id) : tr("%1 (restart)").arg(q(info.id)),
                        QString::number(info.gpuTotal()),
                        QString::number(info.hosts.size()),
                        QString("%1×%2×%3").arg(info.tp).arg(info.pp).arg(info.dp),
                        QString::number(info.steps.size()),
                        median ? formatNs(median) : QString("–"),
                        QString::number(info.findings.size())};
            row.sort = {double(m_rows.size()),       double(info.gpuTotal()),   double(info.hosts.size()),
                        row.text[Parallelism],       double(info.steps.size()), double(median),
                        double(info.findings.size())};
            row.tip = tr("%1: %2 GPUs on %3 hosts, TP %4 × PP %5 × DP %6")
                          .arg(q(info.id))
                          .arg(info.gpuTotal())
                          .arg(info.hosts.size())
                          .arg(info.tp)
                          .arg(info.pp)
                          .arg(info.dp);
            if (!info.restartOf.empty())
                row.tip +=
                    tr("\nRestart of %1: the same GPUs on new connections after it ended").arg(q(info.restartOf));
            for (const auto& n : info.notes) row.tip += "\n• " + q(n);
            row.hasFindings = !info.findings.empty();
            m_rows.push_back(std::move(row));
        }
    }
    endResetModel();
}

int JobTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

int JobTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant JobTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !checkIndex(index)) return {};
    const Row& row = m_rows[std::size_t(index.row())];
    const int c = index.column();
    switch (role) {
    case Qt::DisplayRole: return row.text[std::size_t(c)];
    case Qt::ToolTipRole: return row.tip;
    case Qt::TextAlignmentRole: return c == Job ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    case Qt::ForegroundRole: return c == Findings && row.hasFindings ? QVariant(QColor(0xd6, 0x28, 0x2f)) : QVariant();
    case JobRole: return index.row();
    case SortRole: return row.sort[std::size_t(c)];
    default: return {};
    }
}

QVariant JobTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
    if (role == Qt::DisplayRole) {
        const QString names[] = {tr("Job"),   tr("GPUs"),   tr("Hosts"), tr("TP×PP×DP"),
                                 tr("Steps"), tr("Median"), tr("Finds")};
        return names[section];
    }
    if (role == Qt::ToolTipRole && section == MedianStep) return tr("Median step time");
    if (role == Qt::ToolTipRole && section == Findings) return tr("Findings: slow steps, ranks, links, switches");
    return {};
}

// ---- findings ---------------------------------------------------------------------------------------------

FindingTableModel::FindingTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void FindingTableModel::setJob(const JobDataPtr& data) {
    beginResetModel();
    m_data = data;
    endResetModel();
}

int FindingTableModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() || !m_data) return 0;
    return hasPlaceholder() ? 1 : int(m_data->info().findings.size());
}

int FindingTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

Qt::ItemFlags FindingTableModel::flags(const QModelIndex& index) const {
    if (!index.isValid() || !checkIndex(index) || hasPlaceholder()) return Qt::NoItemFlags;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

QVariant FindingTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !checkIndex(index)) return {};
    const int c = index.column();
    if (hasPlaceholder()) {
        if (c != Kind || role != Qt::DisplayRole) return {};
        return m_data->steps().empty() ? tr("No findings (no steps detected).") : tr("No findings: nothing slow.");
    }
    const int f = index.row();
    const Finding& fd = m_data->info().findings[std::size_t(f)];
    switch (role) {
    case Qt::DisplayRole:
    case SortRole:
        switch (c) {
        case Kind: return q(fd.kind).replace('_', ' ');
        case Where: return m_data->place(f).where;
        case Steps:
            if (role == SortRole) return double(fd.firstStep);
            return fd.firstStep == fd.lastStep ? QString::number(fd.firstStep)
                                               : QString("%1–%2").arg(fd.firstStep).arg(fd.lastStep);
        case Score: return role == SortRole ? QVariant(fd.score) : QVariant(QString::number(fd.score, 'f', 2));
        }
        return {};
    case Qt::DecorationRole:
        return c == Kind ? QVariant(QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning)) : QVariant();
    case Qt::ToolTipRole: return q(fd.message);
    case FindingRole: return f;
    default: return {};
    }
}

QVariant FindingTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) return {};
    const QString names[] = {tr("Finding"), tr("Where"), tr("Steps"), tr("Score")};
    return names[section];
}

} // namespace prism::ui
