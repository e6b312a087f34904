#pragma once
// Colours and time labels shared by the views. Colours derive from the widget palette so a dark palette
// gets colours chosen for it (segment hues darker, text light) instead of light colours on black.
#include "analysis/timeline.h"

#include <QColor>
#include <QPalette>
#include <QString>
#include <cstdint>
#include <vector>

namespace prism::ui {

struct ViewColors {
    bool dark = false;
    QColor background, text, mutedText, grid, header, headerText, bandA, bandB;
    QColor slow;      // slow steps, stragglers, slow links
    QColor slowBand;  // background tint of a slow step
    QColor selection; // outline of the selection
    QColor highlight; // rows the selection points at
    QColor hover;
    QColor kind[6]; // by SegmentKind
    QColor compute() const { return kind[int(SegmentKind::Compute)]; }
    QColor comm() const { return kind[int(SegmentKind::DpSync)]; }
    QColor wait() const { return kind[int(SegmentKind::Wait)]; }
    // A palette of well separated hues for categories (jobs, DP groups, PP stages).
    QColor category(int i) const;

    static ViewColors from(const QPalette& palette);
};

bool isDarkPalette(const QPalette& palette);

// Tick marks of a time axis: a "nice" step (1, 2, 5 × 10^k ns) with labels in the unit of the step.
struct AxisTick {
    std::int64_t t = 0; // absolute ns
    bool major = false;
    QString label; // empty for minor ticks
};

struct TimeAxis {
    std::int64_t step = 1; // ns between major ticks
    QString caption;       // what the labels are relative to, e.g. "+1.200 s from job start"
    std::vector<AxisTick> ticks;
};

// Ticks for [t0, t1) drawn over `width` px with at least `minLabelPx` px between labels. Labels are relative
// to `origin` (the job start) unless `absolute`, in which case they are wall-clock times of day. When the
// labels would need too many digits (deep zoom far from the origin) they become offsets from a rounded
// reference named in the caption.
TimeAxis computeTimeAxis(std::int64_t t0, std::int64_t t1, int width, std::int64_t origin, bool absolute,
                         int minLabelPx = 90);

// "1.234 s", "12.5 ms", "850 ns": a duration with 3-4 significant digits.
QString formatNs(std::int64_t ns);
// A duration written with the unit and decimals that `step` needs ("1.2345 s" for a 100 µs step); from ten
// minutes on as a clock ("6:19:00", "-0:15:15.5" for a 100 ms step).
QString formatNsAtStep(std::int64_t ns, std::int64_t step);
// Items joined by "; ", past `shown` of them "N more" ("a; b; c; 2 more"): a title's list of what it shows.
QString listWithMore(const QStringList& items, int shown);
// Throughput of `bytes` over `ns` in bits, as link speeds and findings read ("98.40 Gb/s").
QString formatRate(std::uint64_t bytes, std::int64_t ns);
QString formatBytesQ(std::uint64_t bytes);
// Wall-clock time of an epoch-ns timestamp, or "+x s" for capture-relative times.
QString formatWallClock(std::int64_t ns);

} // namespace prism::ui
