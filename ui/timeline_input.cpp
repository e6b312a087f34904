// TimelineView input: mouse, wheel and keys (navigation on the shared ZoomControl, selection on the
// ViewState), the context menu, and the search box. Layout and geometry are in timeline_view.cpp, painting
// in timeline_paint.cpp.
#include "timeline_view.h"

#include <QApplication>
#include <QAction>
#include <QContextMenuEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMenu>
#include <QMouseEvent>
#include <QRegularExpression>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace prism::ui {

// ---- mouse and wheel ------------------------------------------------------------------------------------

void TimelineView::clickAt(const QPoint& pos, Qt::KeyboardModifiers) {
    if (!m_data || !m_state) return;
    const QRect plot = plotRect();
    if (const int mark = noteMarkAt(pos); mark >= 0) {
        emit noteMarkClicked(m_noteMarks[std::size_t(mark)].id);
        return;
    }
    if (stepLaneRect().contains(pos) && pos.x() >= plot.left()) {
        int s = stepAtX(pos.x());
        if (s >= 0)
            selectStep(s, false);
        else
            m_state->clearSelection();
        return;
    }
    const int rowIndex = rowIndexAtY(pos.y());
    if (rowIndex < 0) {
        if (axisRect().contains(pos)) return;
        m_state->clearSelection();
        return;
    }
    const Row& row = m_rows[std::size_t(rowIndex)];
    if (pos.x() < plot.left()) {
        if (row.type == Row::Rank)
            m_state->select(Selection::ofRank(row.first), false);
        else
            setGroupCollapsed(row.stage, row.type == Row::Stage ? -1 : row.group, !row.collapsed);
        return;
    }
    if (row.type != Row::Rank) {
        setGroupCollapsed(row.stage, row.type == Row::Stage ? -1 : row.group, !row.collapsed);
        return;
    }
    int seg = -1;
    hitSegment(row.first, pos.x(), &seg);
    if (seg >= 0)
        m_state->select(Selection::ofSegment(row.first, seg), false);
    else
        m_state->select(Selection::ofRank(row.first), false);
}

void TimelineView::wheelEvent(QWheelEvent* event) {
    if (!m_data) return;
    const QPoint pos = event->position().toPoint();
    QPoint delta = event->angleDelta();
    const auto mods = event->modifiers();
    if (mods & Qt::AltModifier) {
        // Alt+wheel: row height (some platforms report Alt+wheel as horizontal).
        int d = delta.y() ? delta.y() : delta.x();
        setRowHeight(m_rowHeight + (d > 0 ? 1 : -1) * std::max(1, m_rowHeight / 6));
        event->accept();
        return;
    }
    if (pos.x() < plotRect().left() && delta.y() != 0) {
        setScroll(m_scrollY - delta.y() * std::max(1, m_rowHeight) * 3 / 120);
        event->accept();
        return;
    }
    if (delta.y() == 0 && delta.x() != 0) {
        panBy(-double(delta.x()) / 120.0 * plotRect().width() * 0.1);
        event->accept();
        return;
    }
    if (delta.y() == 0) return;
    // One undo entry per wheel gesture, not per notch.
    m_zoom->pushGestureUndo();
    const double base = (mods & Qt::ControlModifier) ? 1.05 : (mods & Qt::ShiftModifier) ? 2.0 : 1.25;
    zoomAt(pos.x(), std::pow(base, double(delta.y()) / 120.0));
    event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
    setFocus();
    m_pressPos = event->position().toPoint();
    m_pressT0 = rangeStart();
    m_pressT1 = rangeEnd();
    m_pressScroll = m_scrollY;
    const bool onAxis =
        (axisRect().contains(m_pressPos) || stepLaneRect().contains(m_pressPos)) && m_pressPos.x() >= plotRect().left();
    if (event->button() == Qt::RightButton || event->button() == Qt::LeftButton) {
        m_drag = Drag::Pending;
        m_rangeFromAxis = event->button() == Qt::RightButton || (event->modifiers() & Qt::ShiftModifier) || onAxis;
        m_rangeX0 = m_rangeX1 = m_pressPos.x();
        if (event->button() == Qt::RightButton) m_rangeFromAxis = true;
    }
    event->accept();
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    m_mouse = pos;
    if (m_drag == Drag::Pending && (pos - m_pressPos).manhattanLength() > QApplication::startDragDistance())
        m_drag = m_rangeFromAxis ? Drag::Range : Drag::Pan;
    if (m_drag == Drag::Pan) {
        const double nsPerPx = double(m_pressT1 - m_pressT0) / std::max(1, plotRect().width());
        const std::int64_t d = std::int64_t(double(m_pressPos.x() - pos.x()) * nsPerPx);
        setRange(m_pressT0 + d, m_pressT1 + d, false);
        setScroll(m_pressScroll + (m_pressPos.y() - pos.y()));
        setCursor(Qt::ClosedHandCursor);
        return;
    }
    if (m_drag == Drag::Range) {
        const QRect plot = plotRect();
        m_rangeX1 = std::clamp(pos.x(), plot.left(), plot.right() + 1);
        update();
        return;
    }
    // Hover: outline the segment under the cursor.
    int rank = rankAtY(pos.y());
    int seg = -1;
    if (rank >= 0 && pos.x() >= plotRect().left()) hitSegment(rank, pos.x(), &seg);
    if (rank != m_hoverRank || seg != m_hoverSegment) {
        m_hoverRank = rank;
        m_hoverSegment = seg;
        update();
    }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    unsetCursor();
    if (m_drag == Drag::Range) {
        const int a = std::min(m_rangeX0, m_rangeX1), b = std::max(m_rangeX0, m_rangeX1);
        m_drag = Drag::None;
        if (b - a >= 3) {
            setRange(timeAtX(a), timeAtX(b), true);
        }
        update();
        return;
    }
    const bool wasClick = m_drag == Drag::Pending && event->button() == Qt::LeftButton;
    const bool menuClick = m_drag == Drag::Pending && event->button() == Qt::RightButton;
    m_drag = Drag::None;
    if (wasClick) clickAt(pos, event->modifiers());
    if (menuClick) showContextMenu(event->globalPosition().toPoint());
    update();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    if (pos.x() >= plotRect().left() && (stepLaneRect().contains(pos) || rowIndexAtY(pos.y()) >= 0)) {
        int s = stepAtX(pos.x());
        if (s >= 0) {
            zoomToSteps(s, s);
            selectStep(s, false);
        }
    }
}

// ---- keys, tooltips and the context menu ----------------------------------------------------------------

void TimelineView::keyPressEvent(QKeyEvent* event) {
    const auto mods = event->modifiers();
    const QRect plot = plotRect();
    const double cx = plot.contains(m_mouse) ? m_mouse.x() : plot.center().x();
    const double zoomStep = (mods & Qt::ShiftModifier) ? 2.0 : (mods & Qt::ControlModifier) ? 1.1 : 1.4;
    const double panStep = plot.width() * ((mods & Qt::ShiftModifier) ? 0.5 : 0.15);
    if (event->matches(QKeySequence::Find)) {
        openSearch();
        return;
    }
    switch (event->key()) {
    case Qt::Key_W:
        m_zoom->pushUndo();
        zoomAt(cx, zoomStep);
        return;
    case Qt::Key_S:
        m_zoom->pushUndo();
        zoomAt(cx, 1.0 / zoomStep);
        return;
    case Qt::Key_A: panBy(-panStep); return;
    case Qt::Key_D: panBy(panStep); return;
    case Qt::Key_F:
        if (mods & Qt::ShiftModifier) fitRows();
        fitAll();
        return;
    case Qt::Key_Backspace: undoZoom(); return;
    case Qt::Key_Escape:
        if (m_search->isVisible()) m_search->hide();
        if (m_state) m_state->clearSelection();
        return;
    case Qt::Key_Up: setScroll(m_scrollY - std::max(1, m_rowHeight)); return;
    case Qt::Key_Down: setScroll(m_scrollY + std::max(1, m_rowHeight)); return;
    case Qt::Key_PageUp: setScroll(m_scrollY - plot.height() * 9 / 10); return;
    case Qt::Key_PageDown: setScroll(m_scrollY + plot.height() * 9 / 10); return;
    case Qt::Key_Home: setScroll(0); return;
    case Qt::Key_End: setScroll(m_contentHeight); return;
    case Qt::Key_Left:
    case Qt::Key_Right:
        // Step through steps when one is selected.
        if (m_state && m_data && m_state->selection().kind == Selection::Kind::Step) {
            int s = m_state->selection().step + (event->key() == Qt::Key_Left ? -1 : 1);
            if (s >= 0 && s < int(m_data->steps().size())) selectStep(s, true);
        } else {
            panBy(event->key() == Qt::Key_Left ? -panStep : panStep);
        }
        return;
    default: break;
    }
    QWidget::keyPressEvent(event);
}

void TimelineView::leaveEvent(QEvent*) {
    m_mouse = {-1, -1};
    if (m_hoverRank >= 0) {
        m_hoverRank = m_hoverSegment = -1;
        update();
    }
}

bool TimelineView::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QString text = describeAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    if (event->type() == QEvent::ShortcutOverride) {
        // Let the view's single-key navigation win over application shortcuts while it has focus.
        auto* key = static_cast<QKeyEvent*>(event);
        if (key->modifiers() == Qt::NoModifier || key->modifiers() == Qt::ShiftModifier) {
            switch (key->key()) {
            case Qt::Key_W:
            case Qt::Key_A:
            case Qt::Key_S:
            case Qt::Key_D:
            case Qt::Key_F:
            case Qt::Key_Backspace:
            case Qt::Key_Escape: event->accept(); return true;
            default: break;
            }
        }
    }
    return QWidget::event(event);
}

void TimelineView::contextMenuEvent(QContextMenuEvent* event) {
    // Right-drag zooms to a range, so the mouse menu opens on the release of a right click without a drag
    // (mouseReleaseEvent); the keyboard's menu key opens it here.
    if (event->reason() == QContextMenuEvent::Mouse) return;
    showContextMenu(event->globalPos());
}

void TimelineView::showContextMenu(const QPoint& globalPos) {
    QMenu menu(this);
    menu.addAction(tr("Fit All\tF"), this, &TimelineView::fitAll);
    menu.addAction(tr("Fit All Rows\tShift+F"), this, [this] {
        fitRows();
        fitAll();
    });
    QAction* undo = menu.addAction(tr("Undo Zoom\tBackspace"), this, [this] { undoZoom(); });
    undo->setEnabled(m_zoom->undoDepth() > 0);
    menu.addSeparator();
    menu.addAction(tr("Collapse All Groups"), this, [this] { setAllCollapsed(true); });
    menu.addAction(tr("Expand All Groups"), this, [this] { setAllCollapsed(false); });
    QAction* abs = menu.addAction(tr("Absolute Time"), this, [this](bool on) { setAbsoluteTime(on); });
    abs->setCheckable(true);
    abs->setChecked(m_absolute);
    menu.addAction(tr("Find…\tCtrl+F"), this, &TimelineView::openSearch);
    // Actions the window lends to this menu (e.g. Add Note).
    bool separated = false;
    for (QAction* a : actions()) {
        if (!a->property("inContextMenu").toBool()) continue;
        if (!separated) menu.addSeparator();
        separated = true;
        menu.addAction(a);
    }
    menu.exec(globalPos);
}

// ---- search ---------------------------------------------------------------------------------------------

void TimelineView::openSearch() {
    const QRect plot = plotRect();
    const int w = std::min(320, plot.width() - 8);
    m_search->setGeometry(plot.right() - w - 4, plot.top() + 4, w, m_search->sizeHint().height());
    m_search->show();
    m_search->raise();
    m_search->setFocus();
    m_search->selectAll();
}

bool TimelineView::search(const QString& rawText) {
    if (!m_data || !m_state) return false;
    const QString text = rawText.trimmed();
    if (text.isEmpty()) return false;
    if (text != m_lastSearch) m_searchHit = -1;
    m_lastSearch = text;

    // A step: "12", "#12", "step 12".
    QString stepText = text;
    stepText.remove(QRegularExpression("^(step\\s*|#)", QRegularExpression::CaseInsensitiveOption));
    bool isNumber = false;
    const int stepIndex = stepText.toInt(&isNumber);
    if (isNumber && !text.contains('.') && !text.contains(':')) {
        int pos = m_data->stepPosition(stepIndex);
        if (pos < 0) return false;
        m_state->select(Selection::ofStep(pos), true);
        return true;
    }
    // A host: select the host (its ranks light up).
    if (auto h = m_data->topology().hostByName(text.toStdString())) {
        if (!m_data->ranksOfHost(*h).empty()) {
            m_state->select(Selection::ofHost(*h), true);
            return true;
        }
    }
    // A rank: exact label or address first, then the next label containing the text.
    const int n = m_data->rankCount();
    for (int r = 0; r < n; ++r) {
        if (m_data->rankLabel(r).compare(text, Qt::CaseInsensitive) == 0 ||
            QString::fromStdString(m_data->timeline().ranks[std::size_t(r)].ip) == text) {
            m_searchHit = r;
            m_state->select(Selection::ofRank(r), true);
            return true;
        }
    }
    for (int k = 1; k <= n; ++k) {
        int r = (m_searchHit + k) % n;
        if (r < 0) r += n;
        if (m_data->rankLabel(r).contains(text, Qt::CaseInsensitive) ||
            QString::fromStdString(m_data->timeline().ranks[std::size_t(r)].ip).startsWith(text)) {
            m_searchHit = r;
            m_state->select(Selection::ofRank(r), true);
            return true;
        }
    }
    return false;
}

} // namespace prism::ui
