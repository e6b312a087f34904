#include "export.h"

#include "view_style.h"

#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QFileInfo>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>
#include <QBuffer>

namespace prism::ui {

int exportTitleHeight(const QWidget* widget) {
    QFont f = widget->font();
    f.setBold(true);
    return QFontMetrics(f).height() + 12;
}

static void paintTitle(QPainter& p, const QWidget* w, const QString& text, int width) {
    const int h = exportTitleHeight(w);
    const QPalette pal = w->palette();
    p.fillRect(QRect(0, 0, width, h), pal.color(QPalette::Window));
    p.fillRect(QRect(0, h - 1, width, 1), pal.color(QPalette::Mid));
    QFont bold = w->font();
    bold.setBold(true);
    QFont small = w->font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    const QString stamp = QString("LLMPrism %1").arg(QStringLiteral(LLMPRISM_VERSION));
    const int stampW = QFontMetrics(small).horizontalAdvance(stamp) + 16;
    p.setFont(small);
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(QRect(width - stampW, 0, stampW - 8, h), Qt::AlignVCenter | Qt::AlignRight, stamp);
    p.setFont(bold);
    p.setPen(pal.color(QPalette::WindowText));
    const QString title = QFontMetrics(bold).elidedText(text, Qt::ElideMiddle, width - stampW - 16);
    p.drawText(QRect(10, 0, width - stampW - 16, h), Qt::AlignVCenter | Qt::AlignLeft, title);
}

QImage withTitleStrip(const QImage& body, const QWidget* style, const QString& title) {
    const int th = exportTitleHeight(style);
    QImage img(body.width(), body.height() + th, QImage::Format_ARGB32_Premultiplied);
    img.fill(style->palette().color(QPalette::Base));
    QPainter p(&img);
    paintTitle(p, style, title, body.width());
    p.drawImage(0, th, body);
    p.end();
    return img;
}

QImage renderViewImage(ExportableView& view, QSize size) {
    if (size.isEmpty()) size = view.exportSize();
    size = size.expandedTo(QSize(200, 100));
    const int th = exportTitleHeight(view.exportWidget());
    QImage img(size.width(), size.height() + th, QImage::Format_ARGB32_Premultiplied);
    img.fill(view.exportWidget()->palette().color(QPalette::Base));
    QPainter p(&img);
    paintTitle(p, view.exportWidget(), view.exportTitle(), size.width());
    p.translate(0, th);
    p.setClipRect(QRect(QPoint(0, 0), size));
    view.renderExport(p, size, false);
    p.end();
    return img;
}

bool exportView(ExportableView& view, const QString& path, QString* error, QSize size) {
    if (size.isEmpty()) size = view.exportSize();
    size = size.expandedTo(QSize(200, 100));
    const bool svg = QFileInfo(path).suffix().compare("svg", Qt::CaseInsensitive) == 0;
    QByteArray bytes;
    if (svg) {
        const int th = exportTitleHeight(view.exportWidget());
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        QSvgGenerator gen;
        gen.setOutputDevice(&buffer);
        gen.setSize(QSize(size.width(), size.height() + th));
        gen.setResolution(96); // the CSS pixel: browsers show the SVG at the size of the view
        gen.setViewBox(QRect(0, 0, size.width(), size.height() + th));
        gen.setTitle(view.exportTitle());
        gen.setDescription(
            QString("LLMPrism %1, %2")
                .arg(QStringLiteral(LLMPRISM_VERSION), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)));
        QPainter p(&gen);
        p.fillRect(QRect(0, 0, size.width(), size.height() + th), view.exportWidget()->palette().color(QPalette::Base));
        paintTitle(p, view.exportWidget(), view.exportTitle(), size.width());
        p.translate(0, th);
        p.setClipRect(QRect(QPoint(0, 0), size));
        view.renderExport(p, size, true);
        p.end();
    } else {
        QImage img = renderViewImage(view, size);
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        if (!img.save(&buffer, "PNG")) {
            if (error) *error = QObject::tr("Could not encode the PNG image.");
            return false;
        }
    }
    // Written atomically: a half-written image never replaces a good one.
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size() || !out.commit()) {
        if (error) *error = QObject::tr("Could not write %1: %2").arg(path, out.errorString());
        return false;
    }
    return true;
}

void copyViewToClipboard(ExportableView& view) { QApplication::clipboard()->setImage(renderViewImage(view)); }

} // namespace prism::ui
