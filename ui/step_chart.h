#pragma once
// Step-duration chart (Qt Charts): the time of each step of the selected job, the median as a dashed line,
// slow steps as red markers, the selected step highlighted. Long series are reduced to min/max per pixel
// column of the visible range (Qt Charts costs about 37 ms per 100k points). It shows the steps of the
// visible time range the views share (ViewState::zoom(), at least 8 steps); a click selects the nearest
// step; the wheel zooms, a drag pans, a double-click shows every step — in the timeline too.
#include "export.h"
#include "view_state.h"

#include <QWidget>
#include <utility>

class QChart;
class QChartView;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace prism::ui {

class StepChart : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit StepChart(ViewState* state, QWidget* parent = nullptr);

    QChartView* chartView() const { return m_view; }
    // Points in the duration line (after min/max reduction), for tests.
    int linePointCount() const;
    // The usual step drawn beside the median (slow steps judged against it), 0 when it is the median.
    double usualStepNs() const { return m_usualNs; }
    QString title() const; // the chart's title line
    // Where step `step` (position in JobData::steps()) is drawn, in chartView() viewport coordinates.
    QPoint viewportPointOfStep(int step) const;
    // Selects the step nearest to a viewport point; returns its position or -1.
    int selectAt(const QPoint& viewportPos);
    // The step range on the x axis (step indices; ±0.5 around the first and last shown). Long jobs (thousands
    // of steps) are read by zooming: the wheel zooms around the pointer, a drag pans, a double-click shows all.
    // Setting it sets the shared visible range to the time of those steps (at least 8, within the job's).
    void setVisibleSteps(double lo, double hi);
    std::pair<double, double> visibleSteps() const;

    QString exportTitle() const override;
    QSize exportSize() const override { return size(); }
    void renderExport(QPainter& painter, const QSize& size, bool vector) const override;
    QWidget* exportWidget() override { return this; }

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void followRange(); // the x axis from the shared visible range
    void fillLine();
    void updateSelection();
    void applyColors();
    double unitNs() const { return m_unitNs; }
    std::pair<double, double> fullRange() const;
    std::pair<double, double> clampSteps(double lo, double hi) const; // at least 8 steps, within the job's
    // The step axis against time: a step covers [index - 0.5, index + 0.5] on the axis and its own time;
    // time between steps sits on their boundary, time before or after the steps on the first or last edge.
    double xOfTime(std::int64_t t) const;
    std::int64_t timeAtX(double x) const;

    ViewState* m_state;
    const JobData* m_built = nullptr; // the job the series were built for
    QChart* m_chart = nullptr;
    QChartView* m_view = nullptr;
    QLineSeries* m_line = nullptr;
    QLineSeries* m_median = nullptr;
    QLineSeries* m_usual = nullptr; // the usual step slow steps were judged against, when below the median
    QScatterSeries* m_slow = nullptr;
    QScatterSeries* m_selected = nullptr;
    QValueAxis* m_x = nullptr;
    QValueAxis* m_y = nullptr;
    double m_unitNs = 1e6;
    double m_usualNs = 0;
    QString m_unit = "ms";
    int m_lineWidth = -1; // plot width the line was reduced for
    QString m_baseTitle;  // the title without the zoom range
    double m_pressX = -1; // left button down at this viewport x (-1: up)
    bool m_panning = false;
    double m_panPerPx = 0;                           // steps per pixel when the drag started
    std::pair<std::int64_t, std::int64_t> m_panFrom; // the shared range then
};

} // namespace prism::ui
