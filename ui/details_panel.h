#pragma once
// Details panel: whatever is selected (job, step, rank, segment, host, NIC, switch, finding) with its numbers.
#include "view_state.h"

#include <QWidget>

class QTextBrowser;

namespace prism::ui {

class DetailsPanel : public QWidget {
    Q_OBJECT
public:
    explicit DetailsPanel(ViewState* state, QWidget* parent = nullptr);
    QString text() const; // the panel's content as plain text (tests, copy)
    QString html() const { return m_html; }

private:
    void refresh();
    QString jobHtml(const JobData& d) const;
    QString stepHtml(const JobData& d, int step) const;
    QString rankHtml(const JobData& d, int rank) const;
    QString segmentHtml(const JobData& d, int rank, int segment) const;
    QString hostHtml(int host) const;
    QString nicHtml(int nic) const;
    QString switchHtml(int sw) const;
    QString findingHtml(const JobData& d, int finding) const;

    ViewState* m_state;
    QTextBrowser* m_browser = nullptr;
    QString m_html;
};

} // namespace prism::ui
