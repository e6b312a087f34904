// The visible time range the views share (ZoomControl): fitting a new full range, clamping what is set to it,
// one signal per change, and undo (one entry per zoom, per wheel gesture; none for a pan).
#include "zoom_control.h"

#include <QSignalSpy>
#include <QtTest>

using namespace prism::ui;

class TestZoom : public QObject {
    Q_OBJECT

private slots:
    void theZoomFitsTheFullRangeAndClampsWhatIsSet() {
        ZoomControl zoom;
        QSignalSpy changed(&zoom, &ZoomControl::rangeChanged);
        zoom.reset(1'000'000, 2'000'000); // 1 ms of job
        QCOMPARE(changed.count(), 1);
        QCOMPARE(zoom.start(), 1'000'000 - 10'000); // 1% margin on each side
        QCOMPARE(zoom.end(), 2'000'000 + 10'000);
        QCOMPARE(changed.last().at(0).value<std::int64_t>(), zoom.start());
        QCOMPARE(zoom.undoDepth(), 0);

        zoom.setRange(1'200'000, 1'300'000);
        QCOMPARE(changed.count(), 2);
        QCOMPARE(zoom.start(), 1'200'000);
        QCOMPARE(zoom.end(), 1'300'000);
        zoom.setRange(1'200'000, 1'300'000); // the same range: no signal, no undo entry
        QCOMPARE(changed.count(), 2);
        QCOMPARE(zoom.undoDepth(), 1);
        // Reversed ends are swapped.
        zoom.setRange(1'500'000, 1'400'000, false);
        QCOMPARE(zoom.start(), 1'400'000);
        // At least kMinSpanNs, around the middle asked for.
        zoom.setRange(1'500'000, 1'500'010, false);
        QCOMPARE(zoom.span(), ZoomControl::kMinSpanNs);
        QCOMPARE(zoom.start() + zoom.span() / 2, 1'500'005);
        // At most twice the full range, and never more than half a view past its ends.
        zoom.setRange(-50'000'000, 50'000'000, false);
        QCOMPARE(zoom.span(), 2'000'000);
        QCOMPARE(zoom.start(), 0); // half a view (1 ms) before the full range
        zoom.setRange(1'900'000, 2'900'000, false);
        QCOMPARE(zoom.end(), 2'500'000);
        QCOMPARE(zoom.span(), 1'000'000);
        zoom.setRange(0, 400'000, false);
        QCOMPARE(zoom.start(), 800'000);
        QCOMPARE(zoom.end(), 1'200'000);
    }

    void theZoomUndoesWhatWasPushed() {
        ZoomControl zoom;
        zoom.reset(0, 1'000'000);
        const std::int64_t fit0 = zoom.start(), fit1 = zoom.end();
        zoom.setRange(100'000, 200'000);        // undoable
        zoom.setRange(120'000, 220'000, false); // a pan: not
        zoom.setRange(130'000, 140'000);
        QCOMPARE(zoom.undoDepth(), 2);
        QSignalSpy changed(&zoom, &ZoomControl::rangeChanged);
        QVERIFY(zoom.undo());
        QCOMPARE(zoom.start(), 120'000); // the range shown before the last undoable zoom
        QCOMPARE(zoom.end(), 220'000);
        QVERIFY(zoom.undo());
        QCOMPARE(zoom.start(), fit0);
        QCOMPARE(zoom.end(), fit1);
        QVERIFY(!zoom.undo());
        QCOMPARE(changed.count(), 2);

        // A wheel gesture is one entry however many notches it has.
        for (int i = 0; i < 5; ++i) {
            zoom.pushGestureUndo();
            zoom.setRange(zoom.start() + 10'000, zoom.end() - 10'000, false);
        }
        QCOMPARE(zoom.undoDepth(), 1);
        QVERIFY(zoom.undo());
        QCOMPARE(zoom.start(), fit0);
        // Fit all is undoable; the stack keeps the last kMaxUndo entries; a reset empties it.
        zoom.setRange(10'000, 20'000, false);
        zoom.fitAll();
        QVERIFY(zoom.undo());
        QCOMPARE(zoom.start(), 10'000);
        for (int i = 0; i < ZoomControl::kMaxUndo + 50; ++i) zoom.setRange(i * 1000, i * 1000 + 500);
        QCOMPARE(zoom.undoDepth(), ZoomControl::kMaxUndo);
        zoom.reset(0, 5'000'000);
        QCOMPARE(zoom.undoDepth(), 0);
        QVERIFY(!zoom.undo());
    }
};

QTEST_MAIN(TestZoom)
#include "tst_gui_zoom.moc"
