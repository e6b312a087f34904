#pragma once
// Item models of the window's lists (docs/GUI.md "The window"): the session's jobs and the selected job's
// findings, one row each. The window shows them through a QSortFilterProxyModel sorting on SortRole:
// numbers for numeric columns (GPUs, steps, median, score...), so that 9 sorts before 10, text otherwise.
#include "job_data.h"

#include <QAbstractTableModel>
#include <array>
#include <vector>

namespace prism::ui {

class JobTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Job, Gpus, Hosts, Parallelism, Steps, MedianStep, Findings, ColumnCount };
    static constexpr int JobRole = Qt::UserRole;      // the job's index in the report
    static constexpr int SortRole = Qt::UserRole + 1; // what the proxy sorts on

    explicit JobTableModel(QObject* parent = nullptr);
    void setSession(const SessionPtr& session); // null: no rows

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        std::array<QString, ColumnCount> text;
        std::array<QVariant, ColumnCount> sort;
        QString tip;
        bool hasFindings = false;
    };
    std::vector<Row> m_rows; // row = job index
};

class FindingTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Kind, Where, Steps, Score, ColumnCount };
    static constexpr int FindingRole = Qt::UserRole; // index into the job's findings (none on the placeholder)
    static constexpr int SortRole = Qt::UserRole + 1;

    explicit FindingTableModel(QObject* parent = nullptr);
    // A job without findings shows one disabled row saying so (the view spans it over the columns).
    void setJob(const JobDataPtr& data); // null: no rows
    bool hasPlaceholder() const { return m_data && m_data->findingCount() == 0; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

private:
    JobDataPtr m_data;
};

} // namespace prism::ui
