#pragma once
// Notes panel: the user's notes on the session (a step, a rank, a finding or a time range of a job), listed
// with where they point; activating one jumps there (job, selection and the shared visible range). The panel owns the
// editable list; the main window saves it with the session (.prism) and asks before unsaved notes are lost.
#include "store/notes.h"
#include "view_state.h"

#include <QWidget>

class QLabel;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace prism::ui {

class NotesPanel : public QWidget {
    Q_OBJECT
public:
    explicit NotesPanel(ViewState* state, QWidget* parent = nullptr);

    // Takes the session's stored notes (none for a capture); the list is then clean.
    void setSession(const SessionPtr& session);
    // Another window of the same capture analysed in stages: the notes (placed by job and time, not by the window's
    // records) and whether they are saved stay as they are.
    void keepForWindow(const SessionPtr& session);
    const std::vector<Note>& notes() const { return m_notes.all(); }
    bool isDirty() const { return m_dirty; }
    void markSaved();

    // A note on what is selected: a step, a rank (or a segment's rank), a finding; with nothing selected, the
    // visible time range (ViewState::zoom()). Text empty; false when there is no job.
    bool noteForSelection(Note* note) const;
    // One line saying where a note points ("job-0 · step 12", "job-0 · rank host-3:5", ...).
    QString describe(const Note& note) const;

    // Adds a note (checked against the report); returns its id, 0 with `error` set when it points nowhere.
    std::int64_t addNote(const Note& note, QString* error = nullptr);
    bool setText(std::int64_t id, const QString& text);
    bool removeNote(std::int64_t id);
    // Shows the note's place: selects its job, then its step, rank or finding, or zooms to its range.
    bool jumpTo(std::int64_t id);

    // Asks for a text and adds a note on the selection (the Add Note action).
    void addForSelectionInteractive();

    QTreeWidget* list() const { return m_list; }

signals:
    void notesChanged(); // added, edited or removed (the session has unsaved notes)

private:
    void refill();
    std::int64_t currentId() const;
    void editInteractive(std::int64_t id);

    ViewState* m_state;
    QTreeWidget* m_list = nullptr;
    QLabel* m_empty = nullptr;
    QPushButton* m_add = nullptr;
    QPushButton* m_edit = nullptr;
    QPushButton* m_remove = nullptr;
    NoteList m_notes;
    bool m_dirty = false;
};

} // namespace prism::ui
