#pragma once
// Per-rank chart: for the selected step (or the whole job when no step is selected), each rank's time split
// into compute, communication and waiting, as stacked bars in timeline order with PP stages marked.
// Custom painted: a thousand bars are a thousand fillRects, not a thousand scene items. More ranks than
// pixel columns: each column shows its slowest rank.
#include "export.h"
#include "view_state.h"

#include <QWidget>

namespace prism::ui {

class RankChart : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit RankChart(ViewState* state, QWidget* parent = nullptr);

    int step() const { return m_step; } // the step shown, -1 for the whole job
    const std::vector<TimeSplit>& splits() const { return m_splits; }
    int rankAt(const QPoint& pos) const;

    QString exportTitle() const override;
    QSize exportSize() const override { return size(); }
    void renderExport(QPainter& painter, const QSize& size, bool vector) const override;
    QWidget* exportWidget() override { return this; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

private:
    void recompute();
    QRect plotRect(const QSize& size) const;
    void paint(QPainter& p, const QSize& size) const;

    ViewState* m_state;
    int m_step = -1;
    std::vector<TimeSplit> m_splits;
    std::int64_t m_max = 1;
};

} // namespace prism::ui
