#include "session_file.h"

#include "model/diagnostics.h"

#include <QFile>
#include <QFileInfo>

namespace prism::ui {

bool isSessionFile(const QString& path) {
    QFileInfo info(path);
    if (!info.isFile()) return false;
    if (info.suffix().compare("prism", Qt::CaseInsensitive) == 0) return true;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    return f.read(16) == QByteArray("SQLite format 3\0", 16);
}

std::shared_ptr<AnalysisSession> readSessionFile(const QString& path, const std::function<bool(double)>&) {
    // The session store arrives with core/store; this is where it plugs in.
    throw InputError({path.toStdString(), 0, 0,
                      "this build cannot open .prism session files yet (the session store is not part of it); "
                      "open the capture folder (flows.csv + topology.json) instead"});
}

} // namespace prism::ui
