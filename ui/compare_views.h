#pragma once
// The compare window's own views (docs/GUI.md "Comparing two runs"): the step time of both runs on one chart, and
// the topology of run B with each NIC coloured by how much the differences that name it changed. Both are custom
// painted and read the comparison (core/analysis/compare.h) and the two sessions; neither holds a ViewState.
#include "analysis/compare.h"
#include "analysis_session.h"

#include <QWidget>

#include <vector>

namespace prism::ui {

// Step durations of job A and job B against the step number, with their medians dashed. A click picks the
// nearest step (stepClicked: its position in the steps); the steps shown in the timelines are shaded.
class CompareStepChart : public QWidget {
    Q_OBJECT
public:
    explicit CompareStepChart(QWidget* parent = nullptr);
    void setRuns(std::vector<double> stepsMsA, std::vector<double> stepsMsB, double medianA, double medianB);
    void setShownSteps(double first, double last); // the timelines' range, in steps (-1: none)
    int stepAtX(double x) const;                  // nearest step to a widget x, -1 when there are none
    double xOfStep(int step) const;
    QSize sizeHint() const override { return {420, 240}; }

signals:
    void stepClicked(int step);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRect plotRect() const;
    std::vector<double> m_a, m_b;
    double m_medianA = 0, m_medianB = 0, m_maxMs = 1;
    double m_shownFirst = -1, m_shownLast = -1;
};

// Run B's hosts (those of the compared job) with one cell per NIC, coloured by the largest cause of a difference
// that names the NIC (its rank, its TP group, its stage, the whole job, or its link): red for slower in B, blue
// for faster, the stronger the larger; a changed NIC link is outlined. Hover shows the differences.
class CompareTopology : public QWidget {
    Q_OBJECT
public:
    explicit CompareTopology(QWidget* parent = nullptr);
    void setComparison(const SessionPtr& b, const JobComparison* job);
    // Signed ms per step of the NIC (topology index), 0 when no difference names it; whether its link changed.
    double deltaOfNic(int nic) const;
    bool linkChanged(int nic) const;
    QRect nicRect(int nic) const;
    QSize sizeHint() const override { return {360, 240}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void layout();
    SessionPtr m_b;
    std::vector<int> m_hosts;              // topology hosts shown
    std::vector<double> m_delta;           // per topology NIC
    std::vector<char> m_link, m_inJob;     // per topology NIC
    std::vector<QString> m_tips;           // per topology NIC
    std::vector<QRect> m_hostRect, m_nicRect;
    double m_maxDelta = 0;
};

} // namespace prism::ui
