#pragma once
// The visible time range every view of a job shares (as Qt Creator's TimelineZoomControl or Hotspot's
// FilterAndZoomStack): the timeline draws it, the step chart shows its steps, a note on "what is shown"
// takes it, and each of them sets it. It keeps the job's full range, clamps what is set to it, and keeps
// the undo stack of zooms (Backspace). ViewState owns one per window and resets it when the job changes.
#include <QElapsedTimer>
#include <QObject>
#include <cstdint>
#include <utility>
#include <vector>

namespace prism::ui {

class ZoomControl : public QObject {
    Q_OBJECT
public:
    static constexpr std::int64_t kMinSpanNs = 100; // deepest zoom: 100 ns across a view
    static constexpr int kMaxUndo = 200;

    explicit ZoomControl(QObject* parent = nullptr);

    // A new full range (a job's first to last record or step): the visible range fits it, the undo stack
    // empties. Emits rangeChanged.
    void reset(std::int64_t fullStart, std::int64_t fullEnd);
    std::int64_t fullStart() const { return m_fullStart; }
    std::int64_t fullEnd() const { return m_fullEnd; }

    // Visible range [start, end) in ns (absolute, as in the capture).
    std::int64_t start() const { return m_start; }
    std::int64_t end() const { return m_end; }
    std::int64_t span() const { return m_end - m_start; }

    // Sets the visible range, clamped: kMinSpanNs to twice the full range wide (around the same middle),
    // passing the full range's ends by at most half a view. `pushUndo`: the range shown before becomes an
    // undo entry (a pan or one notch of a gesture passes false). Emits rangeChanged when the range changed.
    void setRange(std::int64_t start, std::int64_t end, bool pushUndo = true);
    std::int64_t clampSpan(std::int64_t span) const;
    void fitAll(); // the full range with a 1% margin on each side, undoable

    // Undo: pushUndo records the range shown (once: the same range twice is one entry); a wheel gesture
    // calls pushGestureUndo on each notch and records one entry per gesture (notches under 600 ms apart).
    void pushUndo();
    void pushGestureUndo();
    bool undo(); // back to the last recorded range; false when there is none
    int undoDepth() const { return int(m_undo.size()); }

signals:
    void rangeChanged(std::int64_t start, std::int64_t end);

private:
    std::pair<std::int64_t, std::int64_t> clamped(std::int64_t start, std::int64_t end) const;
    std::int64_t fitMargin() const;

    std::int64_t m_fullStart = 0, m_fullEnd = 1;
    std::int64_t m_start = 0, m_end = 1;
    std::vector<std::pair<std::int64_t, std::int64_t>> m_undo;
    QElapsedTimer m_lastGesture;
};

} // namespace prism::ui
