#pragma once
// Export of a view (PNG, SVG, clipboard) with a title line naming the capture, the job and the time range,
// so that an image attached to a ticket explains itself.
#include <QImage>
#include <QSize>
#include <QString>

class QPainter;
class QWidget;

namespace prism::ui {

// A view that can draw itself for export at a given size (vector: rects and text, for SVG).
class ExportableView {
public:
    virtual ~ExportableView() = default;
    virtual QString exportTitle() const = 0;
    virtual QSize exportSize() const = 0;
    virtual void renderExport(QPainter& painter, const QSize& size, bool vector) const = 0;
    virtual QWidget* exportWidget() = 0; // the widget (for its palette and font)
};

// Height of the title strip drawn above the view.
int exportTitleHeight(const QWidget* widget);
// An image (a window's grab) under the title strip views export with.
QImage withTitleStrip(const QImage& body, const QWidget* style, const QString& title);
// The view with its title strip, at `size` (the view's own size when empty).
QImage renderViewImage(ExportableView& view, QSize size = {});
// Writes PNG or SVG by the file suffix (anything but .svg is PNG). Returns false with `error` set.
bool exportView(ExportableView& view, const QString& path, QString* error, QSize size = {});
// Puts the image (with title) on the clipboard.
void copyViewToClipboard(ExportableView& view);

} // namespace prism::ui
