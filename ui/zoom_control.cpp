#include "zoom_control.h"

#include <algorithm>
#include <tuple>

namespace prism::ui {

ZoomControl::ZoomControl(QObject* parent) : QObject(parent) { m_lastGesture.invalidate(); }

void ZoomControl::reset(std::int64_t fullStart, std::int64_t fullEnd) {
    m_fullStart = fullStart;
    m_fullEnd = std::max(fullEnd, fullStart + 1);
    std::tie(m_start, m_end) = clamped(m_fullStart - fitMargin(), m_fullEnd + fitMargin());
    m_undo.clear();
    m_lastGesture.invalidate();
    emit rangeChanged(m_start, m_end);
}

std::int64_t ZoomControl::clampSpan(std::int64_t span) const {
    const std::int64_t full = m_fullEnd - m_fullStart;
    return std::clamp<std::int64_t>(span, kMinSpanNs, std::max<std::int64_t>(kMinSpanNs, full * 2));
}

std::int64_t ZoomControl::fitMargin() const { return std::max<std::int64_t>(1, (m_fullEnd - m_fullStart) / 100); }

std::pair<std::int64_t, std::int64_t> ZoomControl::clamped(std::int64_t t0, std::int64_t t1) const {
    if (t1 < t0) std::swap(t0, t1);
    const std::int64_t span = clampSpan(t1 - t0);
    const std::int64_t mid = t0 + (t1 - t0) / 2;
    t0 = mid - span / 2;
    t1 = t0 + span;
    // Keep some of the job in view: the range may pass the job's ends by at most half a view.
    const std::int64_t lo = m_fullStart - span / 2, hi = m_fullEnd + span / 2;
    if (t0 < lo) {
        t1 += lo - t0;
        t0 = lo;
    }
    if (t1 > hi) {
        t0 -= t1 - hi;
        t1 = hi;
    }
    return {t0, t1};
}

void ZoomControl::setRange(std::int64_t start, std::int64_t end, bool push) {
    const auto [t0, t1] = clamped(start, end);
    if (t0 == m_start && t1 == m_end) return;
    if (push) pushUndo();
    m_start = t0;
    m_end = t1;
    emit rangeChanged(m_start, m_end);
}

void ZoomControl::fitAll() { setRange(m_fullStart - fitMargin(), m_fullEnd + fitMargin(), true); }

void ZoomControl::pushUndo() {
    if (!m_undo.empty() && m_undo.back() == std::pair(m_start, m_end)) return;
    m_undo.emplace_back(m_start, m_end);
    if (int(m_undo.size()) > kMaxUndo) m_undo.erase(m_undo.begin());
}

void ZoomControl::pushGestureUndo() {
    if (!m_lastGesture.isValid() || m_lastGesture.elapsed() > 600) pushUndo();
    m_lastGesture.restart();
}

bool ZoomControl::undo() {
    if (m_undo.empty()) return false;
    const auto [a, b] = m_undo.back();
    m_undo.pop_back();
    setRange(a, b, false);
    return true;
}

} // namespace prism::ui
