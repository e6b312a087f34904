#include "notes_panel.h"

#include "view_style.h"

#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace prism::ui {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
constexpr int kIdRole = Qt::UserRole;
} // namespace

NotesPanel::NotesPanel(ViewState* state, QWidget* parent) : QWidget(parent), m_state(state) {
    setObjectName("notesPanel");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    m_list = new QTreeWidget(this);
    m_list->setObjectName("notesList");
    m_list->setHeaderLabels({tr("Where"), tr("Note")});
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->setAlternatingRowColors(true);
    m_list->header()->setStretchLastSection(true);
    m_list->setToolTip(tr("Double-click a note (or press Enter) to jump to its place"));
    layout->addWidget(m_list, 1);
    m_empty = new QLabel(tr("No notes. Select a step, rank or finding (or zoom the timeline to a range) and "
                            "use Edit ▸ Add Note (Ctrl+M)."),
                         this);
    m_empty->setWordWrap(true);
    m_empty->setEnabled(false);
    layout->addWidget(m_empty);
    auto* buttons = new QHBoxLayout;
    m_add = new QPushButton(tr("Add…"), this);
    m_add->setObjectName("addNote");
    m_add->setToolTip(tr("Add a note on the selection, or on the visible time range (Ctrl+M)"));
    m_edit = new QPushButton(tr("Edit…"), this);
    m_edit->setObjectName("editNote");
    m_remove = new QPushButton(tr("Delete"), this);
    m_remove->setObjectName("removeNote");
    buttons->addWidget(m_add);
    buttons->addWidget(m_edit);
    buttons->addWidget(m_remove);
    buttons->addStretch();
    layout->addLayout(buttons);

    connect(m_add, &QPushButton::clicked, this, &NotesPanel::addForSelectionInteractive);
    connect(m_edit, &QPushButton::clicked, this, [this] { editInteractive(currentId()); });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        const std::int64_t id = currentId();
        if (!id) return;
        if (QMessageBox::question(this, tr("Delete note"), tr("Delete this note?")) == QMessageBox::Yes)
            removeNote(id);
    });
    connect(m_list, &QTreeWidget::itemActivated, this,
            [this](QTreeWidgetItem* item) { jumpTo(item->data(0, kIdRole).toLongLong()); });
    connect(m_list, &QTreeWidget::itemSelectionChanged, this, [this] {
        const bool any = currentId() != 0;
        m_edit->setEnabled(any);
        m_remove->setEnabled(any);
    });
    connect(m_state, &ViewState::sessionChanged, this, [this] { m_add->setEnabled(bool(m_state->session())); });
    refill();
}

void NotesPanel::setSession(const SessionPtr& session) {
    m_notes = NoteList(session ? session->notes : std::vector<Note>{});
    m_dirty = false;
    m_add->setEnabled(bool(session));
    refill();
}

void NotesPanel::keepForWindow(const SessionPtr& session) {
    m_add->setEnabled(bool(session));
    refill();
}

void NotesPanel::markSaved() { m_dirty = false; }

std::int64_t NotesPanel::currentId() const {
    const auto items = m_list->selectedItems();
    return items.isEmpty() ? 0 : items.first()->data(0, kIdRole).toLongLong();
}

bool NotesPanel::noteForSelection(Note* note) const {
    const JobDataPtr& d = m_state->jobData();
    if (!d) return false;
    Note n;
    n.jobId = d->info().id;
    const Selection& s = m_state->selection();
    auto rankIp = [&](int rank) {
        return rank >= 0 && rank < d->rankCount() ? d->timeline().ranks[std::size_t(rank)].ip : std::string();
    };
    switch (s.kind) {
    case Selection::Kind::Step:
        n.target = NoteTarget::Step;
        n.step = s.step;
        if (s.step >= 0 && s.step < int(d->steps().size())) {
            n.startNs = d->steps()[std::size_t(s.step)].startNs;
            n.endNs = d->steps()[std::size_t(s.step)].endNs;
        }
        break;
    case Selection::Kind::Rank:
    case Selection::Kind::Segment:
        n.target = NoteTarget::Rank;
        n.ip = rankIp(s.rank);
        n.startNs = m_state->zoom()->start();
        n.endNs = m_state->zoom()->end();
        break;
    case Selection::Kind::Finding:
        n.target = NoteTarget::Finding;
        n.finding = s.finding;
        if (s.finding >= 0 && s.finding < d->findingCount()) {
            n.startNs = d->place(s.finding).startNs;
            n.endNs = d->place(s.finding).endNs;
        }
        break;
    default:
        n.target = NoteTarget::Range;
        n.startNs = m_state->zoom()->start();
        n.endNs = m_state->zoom()->end();
        break;
    }
    *note = n;
    return true;
}

QString NotesPanel::describe(const Note& n) const {
    QString where = q(n.jobId) + " · ";
    const SessionPtr& session = m_state->session();
    const JobInfo* job = nullptr;
    if (session)
        for (const JobInfo& j : session->report().jobs)
            if (j.id == n.jobId) job = &j;
    auto rankName = [&](const std::string& ip) {
        const JobDataPtr& d = m_state->jobData();
        if (d && d->info().id == n.jobId) {
            const int r = d->rankByIp(ip);
            if (r >= 0) return d->rankLabel(r);
        }
        return q(ip);
    };
    switch (n.target) {
    case NoteTarget::Step:
        if (job && n.step >= 0 && std::size_t(n.step) < job->steps.size())
            return where + tr("step %1").arg(job->steps[std::size_t(n.step)].index);
        return where + tr("step #%1").arg(n.step);
    case NoteTarget::Rank: return where + tr("rank %1").arg(rankName(n.ip));
    case NoteTarget::Finding:
        if (job && n.finding >= 0 && std::size_t(n.finding) < job->findings.size()) {
            const Finding& f = job->findings[std::size_t(n.finding)];
            return where + q(f.kind).replace('_', ' ') +
                   (f.firstStep == f.lastStep ? tr(" (step %1)").arg(f.firstStep)
                                              : tr(" (steps %1–%2)").arg(f.firstStep).arg(f.lastStep));
        }
        return where + tr("finding #%1").arg(n.finding);
    case NoteTarget::Range: {
        const std::int64_t origin = job ? job->startNs : 0;
        QString r = tr("%1 … %2").arg(formatNs(n.startNs - origin), formatNs(n.endNs - origin));
        if (!n.ip.empty()) r += tr(" on %1").arg(rankName(n.ip));
        return where + r;
    }
    }
    return where;
}

std::int64_t NotesPanel::addNote(const Note& note, QString* error) {
    const SessionPtr& session = m_state->session();
    if (!session) {
        if (error) *error = tr("no session is open");
        return 0;
    }
    const std::string problem = checkNote(note, session->report());
    if (!problem.empty()) {
        if (error) *error = q(problem);
        return 0;
    }
    const std::int64_t id = m_notes.add(note);
    m_dirty = true;
    refill();
    for (int i = 0; i < m_list->topLevelItemCount(); ++i)
        if (m_list->topLevelItem(i)->data(0, kIdRole).toLongLong() == id)
            m_list->setCurrentItem(m_list->topLevelItem(i));
    emit notesChanged();
    return id;
}

bool NotesPanel::setText(std::int64_t id, const QString& text) {
    const Note* n = m_notes.find(id);
    if (!n || text.trimmed().isEmpty()) return false;
    Note changed = *n;
    changed.text = text.trimmed().toStdString();
    if (changed.text == n->text) return true;
    m_notes.update(changed);
    m_dirty = true;
    refill();
    emit notesChanged();
    return true;
}

bool NotesPanel::removeNote(std::int64_t id) {
    if (!m_notes.remove(id)) return false;
    m_dirty = true;
    refill();
    emit notesChanged();
    return true;
}

bool NotesPanel::jumpTo(std::int64_t id) {
    const Note* n = m_notes.find(id);
    const SessionPtr& session = m_state->session();
    if (!n || !session) return false;
    const NotePlace place = notePlace(*n, session->report());
    if (place.job < 0) return false;
    if (m_state->job() != place.job) m_state->setJob(place.job);
    const JobDataPtr& d = m_state->jobData();
    if (!d) return false;
    const int rank = place.ip.empty() ? -1 : d->rankByIp(place.ip);
    switch (n->target) {
    case NoteTarget::Step: m_state->select(Selection::ofStep(n->step), true); break;
    case NoteTarget::Finding: m_state->select(Selection::ofFinding(n->finding), true); break;
    case NoteTarget::Rank:
        m_state->select(Selection::ofRank(rank), true);
        if (n->endNs > n->startNs) m_state->zoom()->setRange(n->startNs, n->endNs);
        break;
    case NoteTarget::Range:
        if (rank >= 0)
            m_state->select(Selection::ofRank(rank), true);
        else
            m_state->clearSelection();
        m_state->zoom()->setRange(place.startNs, place.endNs);
        break;
    }
    return true;
}

void NotesPanel::addForSelectionInteractive() {
    Note note;
    if (!noteForSelection(&note)) return;
    bool ok = false;
    const QString text = QInputDialog::getMultiLineText(this, tr("Add note"), tr("Note on %1:").arg(describe(note)),
                                                        QString(), &ok);
    if (!ok || text.trimmed().isEmpty()) return;
    note.text = text.trimmed().toStdString();
    QString error;
    if (!addNote(note, &error)) QMessageBox::warning(this, tr("Add note"), tr("The note was not added: %1").arg(error));
}

void NotesPanel::editInteractive(std::int64_t id) {
    const Note* n = m_notes.find(id);
    if (!n) return;
    bool ok = false;
    const QString text = QInputDialog::getMultiLineText(this, tr("Edit note"), tr("Note on %1:").arg(describe(*n)),
                                                        q(n->text), &ok);
    if (ok) setText(id, text);
}

void NotesPanel::refill() {
    const std::int64_t keep = currentId();
    m_list->clear();
    for (const Note& n : m_notes.all()) {
        auto* item = new QTreeWidgetItem(m_list);
        item->setData(0, kIdRole, qlonglong(n.id));
        item->setText(0, describe(n));
        QString text = q(n.text);
        item->setText(1, text.section('\n', 0, 0));
        QString tip = "<b>" + describe(n).toHtmlEscaped() + "</b><br>" + text.toHtmlEscaped().replace('\n', "<br>");
        if (n.createdMs)
            tip +=
                "<br><i>" +
                QDateTime::fromMSecsSinceEpoch(n.modifiedMs ? n.modifiedMs : n.createdMs).toString("yyyy-MM-dd hh:mm") +
                (n.author.empty() ? QString() : " · " + q(n.author)) + "</i>";
        item->setToolTip(0, tip);
        item->setToolTip(1, tip);
        if (n.id == keep) item->setSelected(true);
    }
    m_list->resizeColumnToContents(0);
    m_list->setVisible(!m_notes.empty());
    m_empty->setVisible(m_notes.empty());
    const bool any = currentId() != 0;
    m_edit->setEnabled(any);
    m_remove->setEnabled(any);
}

} // namespace prism::ui
