#pragma once
// The capture overview: what was read (records, RoCE vs other, hosts, NICs, span, input problems)
// and the jobs the analysis found.
#include "analysis_session.h"

#include <QWidget>

class QLabel;
class QTableWidget;
class QFormLayout;

namespace prism::ui {

class SummaryView : public QWidget {
    Q_OBJECT
public:
    explicit SummaryView(QWidget* parent = nullptr);
    void setSession(const SessionPtr& session);
    void clear();
    QTableWidget* jobTable() const { return m_jobs; }
    // Text of one summary field by its label ("Records", "Hosts", ...), for tests.
    QString fieldText(const QString& label) const;

private:
    QLabel* addField(const QString& label);
    QFormLayout* m_form = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_placeholder = nullptr;
    QTableWidget* m_jobs = nullptr;
    QList<QPair<QString, QLabel*>> m_fields;
};

} // namespace prism::ui
