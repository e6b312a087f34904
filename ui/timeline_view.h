#pragma once
// The per-rank Gantt timeline: one row per rank (host:gpu) grouped by PP stage and DP group (collapsible),
// steps as alternating bands with a step lane on top, segments coloured by kind, slow steps and straggler
// ranks in red, a time axis with human units.
//
// Painting (see timeline_paint.cpp) reduces each visible row to one value per pixel column through a
// TimelineIndex and writes pixels straight into a cached image of the rows, keyed on (range, size, scroll,
// layout, palette); hover and selection repaint only overlays on top of that image. Export to SVG takes a
// vector path instead (one fillRect per run of equal columns).
//
// Navigation (see timeline_input.cpp): wheel zooms around the cursor (Ctrl finer, Shift faster), drag pans,
// right-drag / Shift-drag or a drag on the time axis zooms to a range, W/S zoom, A/D pan, F fits, Shift+F
// fits all rows, Backspace undoes a zoom, Ctrl+F searches a rank, host or step, Esc clears the selection.
// The visible time range and its undo live in the ViewState's ZoomControl, shared with the other views.
#include "export.h"
#include "timeline_index.h"
#include "view_state.h"
#include "view_style.h"

#include <QImage>
#include <QSet>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

class QLineEdit;
class QScrollBar;

namespace prism::ui {

class TimelineView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit TimelineView(ViewState* state, QWidget* parent = nullptr);
    ~TimelineView() override;

    // Shows a job without a ViewState (benchmarks, previews); normally the view follows its ViewState.
    void setJobData(const JobDataPtr& data);
    const JobDataPtr& jobData() const { return m_data; }

    // The visible time range: the ViewState's (its own without one). The shortcuts below act on it.
    ZoomControl* zoom() const { return m_zoom; }
    std::int64_t rangeStart() const { return m_zoom->start(); }
    std::int64_t rangeEnd() const { return m_zoom->end(); }
    void setRange(std::int64_t t0, std::int64_t t1, bool pushUndo = true) { m_zoom->setRange(t0, t1, pushUndo); }
    void fitAll() { m_zoom->fitAll(); }
    bool undoZoom() { return m_zoom->undo(); }
    int undoDepth() const { return m_zoom->undoDepth(); }
    void zoomAt(double x, double factor); // factor > 1 zooms in, keeping the time under widget x in place
    void panBy(double dxPx);              // positive: later times come into view
    void fitRows();                       // row height so that every row fits (down to 1 px)
    void zoomToSteps(int first, int last); // positions in JobData::steps(), with a small margin
    void zoomToFinding(int finding);
    void revealRank(int rank);
    // Scrolls to the rank of the first finding that names one (what a job's default screenshot must show);
    // returns that rank, -1 when no finding names one.
    int revealFindingRank();

    // Finds a rank label, host name, address or step ("12", "#12", "step 12"); selects and reveals the first
    // match after the previous one. Returns whether anything matched.
    bool search(const QString& text);
    void openSearch();

    void setRowHeight(int px);
    int rowHeight() const { return m_rowHeight; }
    void setAbsoluteTime(bool absolute);
    bool absoluteTime() const { return m_absolute; }
    void setGroupCollapsed(int stage, int group, bool collapsed); // group -1: the whole stage
    void setAllCollapsed(bool collapsed);
    bool isRankVisible(int rank) const; // not inside a collapsed group

    // Geometry, in widget coordinates (tests and tools).
    QRect plotRect() const;     // the area of the rank rows
    QRect stepLaneRect() const; // the step lane above the rows
    QRect axisRect() const;
    int labelWidth() const { return m_labelWidth; }
    double xOfTime(std::int64_t t) const;
    std::int64_t timeAtX(double x) const;
    int yOfRank(int rank) const; // centre of the rank's row, -1 when hidden
    int rankAtY(int y) const;    // -1 outside rank rows
    int stepAtX(double x) const; // position in steps(), -1 when none

    // Full paint of the view at `size` (labels, axis, step lane, rows, overlays). `vector`: rows as rects
    // (for SVG and printers) instead of pixels written into an image.
    void render(QPainter& painter, const QSize& size, bool vector) const;
    QString exportTitle() const override; // capture, job and time range, for exported images
    QSize exportSize() const override { return size(); }
    void renderExport(QPainter& painter, const QSize& size, bool vector) const override {
        render(painter, size, vector);
    }
    QWidget* exportWidget() override { return this; }
    int paintCount() const { return m_paintCount; }
    int rowsImageBuilds() const { return m_cacheBuilds; } // hover and selection repaint without rebuilding
    // Text under a point (what the tooltip shows), empty when nothing.
    QString describeAt(const QPoint& pos) const;

    // The user's notes on the shown job, drawn as flags on the step lane (a bracket under the lane for a
    // range); hovering one shows its text, clicking it emits noteMarkClicked.
    struct NoteMark {
        qint64 id = 0;
        std::int64_t startNs = 0, endNs = 0;
        QString where, text;
    };
    void setNoteMarks(std::vector<NoteMark> marks);
    const std::vector<NoteMark>& noteMarks() const { return m_noteMarks; }
    int noteMarkAt(const QPoint& pos) const; // index into noteMarks(), -1 when none

signals:
    void noteMarkClicked(qint64 id);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;
    bool event(QEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

public:
    struct Row {
        enum Type : std::uint8_t { Stage, Group, Rank };
        Type type = Rank;
        int stage = 0;
        int group = -1;
        int first = 0, last = 0; // ranks [first, last) the row stands for
        int y = 0, h = 0;        // in content coordinates (0 = top of the rows)
        bool collapsed = false;
    };
    const std::vector<Row>& rows() const { return m_rows; }

private:
    struct Frame; // geometry of one paint, see timeline_paint.cpp
    Frame frame(const QSize& size) const;
    void paintRowsImage(QImage& image, const Frame& f) const;
    void paintRowsVector(QPainter& p, const Frame& f) const;
    void paintSegmentText(QPainter& p, const Frame& f) const;
    void paintStaticOverlays(QPainter& p, const Frame& f) const;
    void paintSelection(QPainter& p, const Frame& f) const;
    void paintLabels(QPainter& p, const Frame& f) const;
    void paintAxis(QPainter& p, const Frame& f) const;
    void paintStepLane(QPainter& p, const Frame& f) const;
    void paintNoteMarks(QPainter& p, const Frame& f) const;
    void paintChrome(QPainter& p, const Frame& f) const;
    void paintLegend(QPainter& p, const Frame& f) const;
    void paintEmpty(QPainter& p, const QSize& size) const;
    void stepColumns(const Frame& f, std::vector<int>& step) const;

    void showContextMenu(const QPoint& globalPos);
    void onSelectionChanged(const Selection& s, bool reveal);
    void rebuildLayout();
    void updateScrollBar();
    void setScroll(int y);
    void invalidate();
    int rowIndexAtY(int y) const;
    int hitSegment(int rank, double x, int* segmentOut) const;
    void clickAt(const QPoint& pos, Qt::KeyboardModifiers mods);
    void selectStep(int step, bool reveal);
    std::int64_t jobStart() const { return m_data ? m_data->startNs() : 0; }
    std::int64_t jobEnd() const { return m_data ? m_data->endNs() : 1; }

    ViewState* m_state = nullptr;
    ZoomControl* m_zoom = nullptr;
    JobDataPtr m_data;
    std::shared_ptr<const TimelineIndex> m_index; // the session's, or built here when it has none
    std::vector<Row> m_rows;
    std::vector<int> m_rowOfRank; // index into m_rows, -1 when collapsed
    QSet<qint64> m_collapsed;     // key: stage << 32 | (group + 1)
    int m_contentHeight = 0;
    int m_scrollY = 0;
    int m_rowHeight = 18;
    int m_labelWidth = 160;
    bool m_absolute = false;
    std::vector<NoteMark> m_noteMarks; // sorted by start
    ViewColors m_colors;

    // Rows image cache.
    mutable QImage m_cache;
    mutable QString m_cacheKey;
    int m_layoutVersion = 0;
    mutable int m_paintCount = 0;
    int m_cacheBuilds = 0;

    // Interaction.
    enum class Drag { None, Pending, Pan, Range };
    Drag m_drag = Drag::None;
    QPoint m_pressPos;
    std::int64_t m_pressT0 = 0, m_pressT1 = 0;
    int m_pressScroll = 0;
    bool m_rangeFromAxis = false;
    int m_rangeX0 = 0, m_rangeX1 = 0;
    int m_hoverRank = -1, m_hoverSegment = -1;
    QPoint m_mouse{-1, -1};

    QScrollBar* m_vbar = nullptr;
    QLineEdit* m_search = nullptr;
    QString m_lastSearch;
    int m_searchHit = -1;
};

} // namespace prism::ui
