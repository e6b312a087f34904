#pragma once
// Topology view: spines on top, then per pod (hosts sharing the same leaf switches) its leaves and its hosts,
// each host with one cell per NIC/GPU. Cells are coloured by job, DP group or PP stage; slow links, slow
// switches and straggler GPUs are drawn in red. A click selects a host (its ranks light up in the
// timeline), a NIC or a switch. Custom painted; the layout is recomputed only when the size changes.
#include "export.h"
#include "view_state.h"

#include <QWidget>
#include <vector>

namespace prism::ui {

class TopologyView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    enum class ColorBy { Job, DpGroup, PpStage };
    explicit TopologyView(ViewState* state, QWidget* parent = nullptr);

    void setColorBy(ColorBy mode);
    ColorBy colorBy() const { return m_colorBy; }

    // Geometry in widget coordinates (empty when not laid out), and hit tests.
    QRect hostRect(int host) const;
    QRect nicRect(int nic) const;
    int hostAt(const QPoint& pos) const;
    int nicAt(const QPoint& pos) const;
    int switchAt(const QPoint& pos) const;
    // NICs and switches marked slow by the findings of any job.
    bool isSlowNic(int nic) const;
    bool isSlowSwitch(int sw) const;

    QString exportTitle() const override;
    QSize exportSize() const override { return size(); }
    void renderExport(QPainter& painter, const QSize& size, bool vector) const override;
    QWidget* exportWidget() override { return this; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Layout {
        QSize size;
        std::vector<QRect> host, nic, sw;
        int cell = 0;
        QRect legend;
    };
    void onSessionChanged();
    void layout(const QSize& size, Layout& out) const;
    const Layout& currentLayout() const;
    void paint(QPainter& p, const QSize& size) const;
    QColor nicColor(int nic, const std::vector<int>& rankOfNic) const;

    ViewState* m_state;
    ColorBy m_colorBy = ColorBy::Job;
    std::vector<int> m_jobOfNic; // report job using each topology NIC, -1 when none
    std::vector<char> m_slowNic; // NIC link named by a slow_link finding
    std::vector<char> m_slowSw;  // switch named by a slow_switch (or slow_link) finding
    std::vector<char> m_stragglerNic;
    std::vector<std::pair<int, int>> m_stragglers; // per slow-rank finding: its named NIC, its TP group's GPUs
    mutable Layout m_layout;
};

} // namespace prism::ui
