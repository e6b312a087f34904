// MainWindow: session files (.prism) and the user's notes — saving in the foreground or the background,
// saving only the notes in place, asking before unsaved notes are lost, the title, the notes' timeline flags.
#include "main_window.h"

#include "capture_loader.h"
#include "notes_panel.h"
#include "session_file.h"
#include "timeline_view.h"
#include "view_state.h"

#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QtConcurrent/QtConcurrentRun>

namespace prism::ui {

void MainWindow::updateNoteMarks() {
    std::vector<TimelineView::NoteMark> marks;
    const JobDataPtr& d = m_state->jobData();
    if (m_session && d) {
        for (const Note& n : m_notes->notes()) {
            if (n.jobId != d->info().id) continue;
            const NotePlace place = notePlace(n, m_session->report());
            TimelineView::NoteMark m;
            m.id = n.id;
            m.where = m_notes->describe(n);
            m.text = QString::fromStdString(n.text);
            // A rank note marks where the view was when it was written (its place is the whole job).
            m.startNs = n.target == NoteTarget::Rank && n.endNs > n.startNs ? n.startNs : place.startNs;
            m.endNs = n.target == NoteTarget::Rank && n.endNs > n.startNs ? n.endNs : place.endNs;
            marks.push_back(std::move(m));
        }
    }
    m_timeline->setNoteMarks(std::move(marks));
}

QString MainWindow::shownPath() const {
    if (!m_session) return {};
    return m_sessionPath.isEmpty() ? m_session->source : m_sessionPath;
}

bool MainWindow::hasUnsavedNotes() const { return m_session && m_notes->isDirty(); }

void MainWindow::updateTitle() {
    if (!m_session) {
        setWindowTitle(tr("LLMPrism"));
        setWindowModified(false);
        return;
    }
    const QString name = QFileInfo(shownPath()).fileName();
    setWindowTitle(tr("%1[*] — LLMPrism").arg(name));
    setWindowModified(m_notes->isDirty());
}

// A session file holds a capture whole; a capture analysed in stages is never held whole.
static QString kStagedNotSaved() {
    return QObject::tr("This capture is larger than memory and was analysed in stages: a session file would hold "
                       "only the window shown. Export the report with `llmprism-cli analyze CAPTURE --json OUT`, or "
                       "images of the views, instead.");
}

bool MainWindow::saveSessionAs(const QString& path, QString* error) {
    if (!m_session) {
        if (error) *error = tr("no capture is open");
        return false;
    }
    if (m_session->staged) {
        if (error) *error = kStagedNotSaved();
        return false;
    }
    try {
        writeSessionFile(path, *m_session, m_notes->notes());
    } catch (const std::exception& e) {
        if (error) *error = CaptureLoader::describeError(e);
        return false;
    }
    m_sessionPath = QFileInfo(path).absoluteFilePath();
    m_notes->markSaved();
    addRecent(m_sessionPath);
    updateTitle();
    return true;
}

void MainWindow::saveSessionInteractive(bool askPath) {
    if (!m_session || m_saving) return;
    if (m_session->staged) {
        QMessageBox::information(this, tr("Save Session"), kStagedNotSaved());
        return;
    }
    if (!askPath && !m_sessionPath.isEmpty()) {
        // The flows and the analysis are in the file already: write the notes in place (one transaction).
        try {
            writeNotes(m_sessionPath.toStdString(), m_notes->notes());
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Could not save the notes"),
                                 tr("%1\n\nUse File ▸ Save Session As to save a copy elsewhere.")
                                     .arg(CaptureLoader::describeError(e)));
            return;
        }
        m_notes->markSaved();
        updateTitle();
        statusBar()->showMessage(tr("Saved %1 notes in %2").arg(m_notes->notes().size()).arg(m_sessionPath), 6000);
        return;
    }
    QSettings settings;
    QString base = QFileInfo(shownPath()).completeBaseName();
    if (base.isEmpty()) base = "session";
    const QString dir =
        settings.value("paths/lastSession", settings.value("paths/lastFolder").toString()).toString();
    QString path = QFileDialog::getSaveFileName(this, tr("Save session"), dir + "/" + base + ".prism",
                                                tr("LLMPrism session (*.prism)"));
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += ".prism";
    settings.setValue("paths/lastSession", QFileInfo(path).absolutePath());

    // In the background: a large capture takes a second or two (the window stays responsive).
    m_saving = true;
    if (m_loadKind == Load::None) m_progress->setValue(0); // (a load running keeps the bar)
    updateBusy();
    m_statusLabel->setText(tr("Saving %1…").arg(QFileInfo(path).fileName()));
    const SessionPtr session = m_session;
    const std::vector<Note> notes = m_notes->notes();
    QPointer<MainWindow> self(this);
    (void)QtConcurrent::run([self, session, notes, path] {
        QString error;
        try {
            writeSessionFile(path, *session, notes, [self](double f) {
                if (self)
                    QMetaObject::invokeMethod( // to the application, which outlives the window (see CaptureLoader)
                        qApp,
                        [self, f] {
                            if (self && self->m_loadKind == Load::None) self->m_progress->setValue(int(f * 1000));
                        },
                        Qt::QueuedConnection);
                return true;
            });
        } catch (const std::exception& e) {
            error = CaptureLoader::describeError(e);
        }
        if (!self) return;
        QMetaObject::invokeMethod(
            qApp,
            [self, session, notes, path, error] {
                if (!self) return;
                self->m_saving = false;
                self->updateBusy();
                if (!error.isEmpty()) {
                    self->m_statusLabel->setText(tr("Could not save %1").arg(QFileInfo(path).fileName()));
                    QMessageBox::warning(self, tr("Could not save the session"), error);
                    return;
                }
                if (self->m_session != session) return; // another capture was opened meanwhile
                self->m_sessionPath = QFileInfo(path).absoluteFilePath();
                if (self->m_notes->notes() == notes) self->m_notes->markSaved();
                self->addRecent(self->m_sessionPath);
                self->updateTitle();
                self->m_statusLabel->setText(tr("Saved %1").arg(self->m_sessionPath));
            },
            Qt::QueuedConnection);
    });
}

bool MainWindow::maybeKeepNotes() {
    if (!hasUnsavedNotes()) return true;
    if (m_saving) { // the notes go into the session being written; its end says whether they are kept
        QMessageBox::information(this, tr("Unsaved notes"),
                                 tr("A session is being saved with your notes. Try again when it is saved."));
        return false;
    }
    if (m_session->staged) { // no session file can hold them (kStagedNotSaved)
        return QMessageBox::question(this, tr("Unsaved notes"),
                                     tr("The notes on %1 cannot be saved: the capture is larger than memory and was "
                                        "analysed in stages, which a session file cannot hold. Discard them?")
                                         .arg(QFileInfo(shownPath()).fileName()),
                                     QMessageBox::Discard | QMessageBox::Cancel,
                                     QMessageBox::Cancel) == QMessageBox::Discard;
    }
    const auto answer = QMessageBox::question(
        this, tr("Unsaved notes"),
        tr("The notes on %1 are not saved. Save them in a session file?")
            .arg(QFileInfo(shownPath()).fileName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) return false;
    if (answer == QMessageBox::Discard) return true;
    if (!m_sessionPath.isEmpty()) {
        saveSessionInteractive(false);
        return !m_notes->isDirty();
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Save session"), QString(),
                                                      tr("LLMPrism session (*.prism)"));
    if (path.isEmpty()) return false;
    QString error;
    if (!saveSessionAs(QFileInfo(path).suffix().isEmpty() ? path + ".prism" : path, &error)) {
        QMessageBox::warning(this, tr("Could not save the session"), error);
        return false;
    }
    return true;
}

} // namespace prism::ui
