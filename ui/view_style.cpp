#include "view_style.h"

#include "model/units.h"

#include <QDateTime>
#include <QTimeZone>
#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace prism::ui {

bool isDarkPalette(const QPalette& palette) { return palette.color(QPalette::Base).lightness() < 110; }

ViewColors ViewColors::from(const QPalette& pal) {
    ViewColors c;
    c.dark = isDarkPalette(pal);
    c.background = pal.color(QPalette::Base);
    c.text = pal.color(QPalette::Text);
    c.mutedText = pal.color(QPalette::PlaceholderText);
    if (c.mutedText == c.text || !c.mutedText.isValid())
        c.mutedText = c.dark ? QColor(0x8a, 0x8f, 0x98) : QColor(0x70, 0x70, 0x70);
    c.header = pal.color(QPalette::Window);
    c.headerText = pal.color(QPalette::WindowText);
    if (c.dark) {
        c.grid = QColor(0x3a, 0x3d, 0x42);
        c.bandA = c.background;
        c.bandB = c.background.lighter(135);
        c.slow = QColor(0xff, 0x5a, 0x5f);
        c.slowBand = QColor(0x5a, 0x24, 0x28);
        c.selection = QColor(0xff, 0xd8, 0x4d);
        c.highlight = QColor(0x3e, 0x7b, 0xd6, 110);
        c.hover = QColor(255, 255, 255, 200);
        c.kind[int(SegmentKind::Compute)] = QColor(0x4a, 0x6f, 0xa8);
        c.kind[int(SegmentKind::PpSend)] = QColor(0x2f, 0xa5, 0x7d);
        c.kind[int(SegmentKind::PpRecv)] = QColor(0x73, 0xc6, 0xa4);
        c.kind[int(SegmentKind::DpSync)] = QColor(0xe0, 0x95, 0x2e);
        c.kind[int(SegmentKind::Wait)] = QColor(0x8a, 0x7a, 0x45);
        c.kind[int(SegmentKind::Other)] = QColor(0x9b, 0x72, 0xc4);
    } else {
        c.grid = QColor(0xd8, 0xdb, 0xe0);
        c.bandA = c.background;
        c.bandB = c.background.darker(105);
        c.slow = QColor(0xd6, 0x28, 0x2f);
        c.slowBand = QColor(0xfa, 0xd4, 0xd5);
        c.selection = QColor(0x1a, 0x1a, 0x1a);
        c.highlight = QColor(0x3e, 0x7b, 0xd6, 70);
        c.hover = QColor(0, 0, 0, 200);
        c.kind[int(SegmentKind::Compute)] = QColor(0x7f, 0xa2, 0xd4);
        c.kind[int(SegmentKind::PpSend)] = QColor(0x1f, 0x9e, 0x74);
        c.kind[int(SegmentKind::PpRecv)] = QColor(0x86, 0xd1, 0xb2);
        c.kind[int(SegmentKind::DpSync)] = QColor(0xf0, 0x9a, 0x22);
        c.kind[int(SegmentKind::Wait)] = QColor(0xe3, 0xcf, 0x8f);
        c.kind[int(SegmentKind::Other)] = QColor(0xa9, 0x7b, 0xd0);
    }
    return c;
}

QColor ViewColors::category(int i) const {
    // Tableau-like hues, well apart; dark palettes get them a little dimmer.
    static const QRgb hues[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2, 0xedc948,
                                0xb07aa1, 0xff9da7, 0x9c755f, 0x86bcb6, 0xd37295, 0x8cd17d};
    QColor c = QColor::fromRgb(hues[std::size_t(std::abs(i)) % (sizeof hues / sizeof hues[0])]);
    return dark ? c.darker(115) : c;
}

namespace {

struct Unit {
    double ns;
    const char* name;
};

Unit unitFor(double magnitude) {
    if (magnitude >= 1e9) return {1e9, "s"};
    if (magnitude >= 1e6) return {1e6, "ms"};
    if (magnitude >= 1e3) return {1e3, "µs"};
    return {1, "ns"};
}

int decimalsFor(double unitNs, std::int64_t step) {
    if (step <= 0 || double(step) >= unitNs) return 0;
    return std::clamp(int(std::ceil(std::log10(unitNs / double(step)) - 1e-9)), 0, 9);
}

QString fixed(double v, int decimals) { return QString::number(v, 'f', decimals); }

} // namespace

QString formatNs(std::int64_t ns) {
    double a = std::fabs(double(ns));
    if (a >= 3600e9) return QString::fromStdString(formatDuration(ns));
    Unit u = unitFor(a);
    double v = double(ns) / u.ns;
    double av = std::fabs(v);
    int d = u.ns == 1 ? 0 : av < 10 ? 3 : av < 100 ? 2 : av < 1000 ? 1 : 0;
    return fixed(v, d) + " " + u.name;
}

// "1:02:03", "26:00:00": a duration in hours, minutes and seconds (hours unbounded).
static QString clockLabel(std::int64_t ns) {
    const bool neg = ns < 0;
    const std::int64_t s = (neg ? -ns : ns) / 1'000'000'000LL;
    return QString("%1%2:%3:%4")
        .arg(neg ? "-" : "")
        .arg(s / 3600)
        .arg(s / 60 % 60, 2, 10, QChar('0'))
        .arg(s % 60, 2, 10, QChar('0'));
}

QString formatNsAtStep(std::int64_t ns, std::int64_t step) {
    const double magnitude = std::max(std::fabs(double(ns)), double(step));
    if (magnitude >= 600e9) { // ten minutes on: a clock, as the window's times read ("6:19:00", not "22740 s")
        QString text = clockLabel(ns);
        if (const int d = decimalsFor(1e9, step); d > 0)
            text += "." + QString::number((ns < 0 ? -ns : ns) % 1'000'000'000).rightJustified(9, '0').left(d);
        return text;
    }
    Unit u = unitFor(magnitude);
    return fixed(double(ns) / u.ns, decimalsFor(u.ns, step)) + " " + u.name;
}

QString listWithMore(const QStringList& items, int shown) {
    if (items.size() <= shown) return items.join("; ");
    return (items.mid(0, shown) << QObject::tr("%1 more").arg(items.size() - shown)).join("; ");
}

QString formatRate(std::uint64_t bytes, std::int64_t ns) {
    if (ns <= 0) return QStringLiteral("–");
    double bps = double(bytes) / (double(ns) / 1e9);
    const double bits = bps * 8; // in bits, as link speeds and the findings read (a 200 Gb/s NIC)
    if (bits >= 1e9) return QString::number(bits / 1e9, 'f', 2) + " Gb/s";
    if (bits >= 1e6) return QString::number(bits / 1e6, 'f', 1) + " Mb/s";
    return QString::number(bits / 1e3, 'f', 1) + " kb/s";
}

QString formatBytesQ(std::uint64_t bytes) { return QString::fromStdString(formatBytes(bytes)); }

static constexpr std::int64_t kEpoch2000Ns = 946684800LL * 1000000000LL;

QString formatWallClock(std::int64_t ns) { return QString::fromStdString(formatTimestamp(ns)); }

static QString timeOfDay(std::int64_t ns, int decimals) {
    std::int64_t secs = ns / 1000000000LL;
    std::int64_t frac = ns % 1000000000LL;
    QTime t = QDateTime::fromSecsSinceEpoch(secs, QTimeZone::utc()).time();
    QString s = t.toString("HH:mm:ss");
    if (decimals > 0) {
        QString f = QString::number(frac).rightJustified(9, '0').left(decimals);
        s += "." + f;
    }
    return s;
}

// Time of day of an epoch-ns tick, UTC: "06:30:00"; from hour steps on with the date, "11-02 06:00".
static QString wallClockLabel(std::int64_t ns, std::int64_t step) {
    const QDateTime t = QDateTime::fromSecsSinceEpoch(ns / 1'000'000'000LL, QTimeZone::utc());
    return step >= 3600'000'000'000LL ? t.toString("MM-dd HH:mm") : t.toString("HH:mm:ss");
}

TimeAxis computeTimeAxis(std::int64_t t0, std::int64_t t1, int width, std::int64_t origin, bool absolute,
                         int minLabelPx) {
    TimeAxis axis;
    if (t1 <= t0 || width <= 0) return axis;
    const double nsPerPx = double(t1 - t0) / double(width);
    const double minStep = std::max(1.0, nsPerPx * double(minLabelPx));
    std::int64_t step = 1;
    int mantissa = 1;
    for (std::int64_t p = 1;; p *= 10) {
        if (double(p) >= minStep) {
            step = p;
            mantissa = 1;
            break;
        }
        if (double(2 * p) >= minStep) {
            step = 2 * p;
            mantissa = 2;
            break;
        }
        if (double(5 * p) >= minStep) {
            step = 5 * p;
            mantissa = 5;
            break;
        }
        if (p > std::int64_t(1e17)) {
            step = p;
            break;
        }
    }
    // Beyond ~20 s per label the axis counts like a clock (1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, days) and
    // labels read h:mm:ss from the job start, or the time of day (with the date for hour steps).
    std::int64_t minor = step >= 10 ? step / (mantissa == 2 ? 4 : 5) : 0;
    const bool clock = minStep >= 20e9;
    if (clock) {
        static constexpr std::pair<std::int64_t, int> kClock[] = {
            {30, 6},   {60, 4},    {120, 4},   {300, 5},   {600, 5},    {900, 3},   {1800, 3},
            {3600, 4}, {7200, 4},  {10800, 3}, {21600, 6}, {43200, 6}, {86400, 4}, {172800, 2}, {604800, 7}};
        step = 0;
        for (auto [secs, parts] : kClock)
            if (double(secs) * 1e9 >= minStep) {
                step = secs * 1'000'000'000LL;
                minor = step / parts;
                break;
            }
        if (!step) { // weeks and beyond: whole weeks
            step = std::int64_t(std::ceil(minStep / 604800e9)) * 604800'000'000'000LL;
            minor = step / 7;
        }
    }
    axis.step = step;

    const bool wall = absolute && origin >= kEpoch2000Ns;
    if (absolute && !wall) origin = 0; // capture-relative timestamps: absolute means from time zero
    // Reference the labels are relative to: the job start, or a rounded point near t0 when labels relative
    // to the job start would need too many digits.
    std::int64_t ref = wall ? 0 : origin;
    bool offsets = false;
    if (clock) {
        offsets = false;
    } else if (wall) {
        offsets = step < 1000; // below 1 µs, time of day needs more than 6 decimals
    } else {
        double mag = std::max(std::fabs(double(t0 - origin)), std::fabs(double(t1 - origin)));
        Unit u = unitFor(std::max(mag, double(step)));
        int digits = decimalsFor(u.ns, step) + int(std::floor(std::log10(std::max(1.0, mag / u.ns)))) + 1;
        offsets = digits > 7;
    }
    if (offsets) {
        const std::int64_t block = step * 100;
        ref = (wall ? 0 : origin) + ((t0 - (wall ? 0 : origin)) / block) * block;
        axis.caption = wall
            ? QObject::tr("offsets from %1 UTC").arg(timeOfDay(ref, 9))
            : QObject::tr("offsets from %1%2").arg(ref >= origin ? "+" : "", formatNsAtStep(ref - origin, step));
    } else if (wall) {
        axis.caption = QObject::tr("UTC, %1").arg(
            QDateTime::fromSecsSinceEpoch(t0 / 1000000000LL, QTimeZone::utc()).date().toString(Qt::ISODate));
    } else {
        axis.caption = absolute ? QObject::tr("capture time") : QObject::tr("time from job start");
    }

    auto floorDiv = [](std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
    const std::int64_t tickStep = minor > 0 ? minor : step;
    const std::int64_t base = offsets ? ref : (wall ? 0 : origin);
    std::int64_t k = floorDiv(t0 - base, tickStep);
    for (std::int64_t t = base + k * tickStep; t <= t1; t += tickStep) {
        if (t < t0) continue;
        AxisTick tick;
        tick.t = t;
        tick.major = (t - base) % step == 0;
        if (tick.major) {
            if (clock) {
                tick.label = wall ? wallClockLabel(t, step) : (t > origin ? "+" : "") + clockLabel(t - origin);
                if (!wall && t == origin) tick.label = "0";
            } else if (offsets) {
                tick.label = "+" + formatNsAtStep(t - ref, step);
            } else if (wall) {
                int d = step >= 1000000000 ? 0 : decimalsFor(1e9, step);
                tick.label = timeOfDay(t, d);
            } else {
                std::int64_t v = t - origin;
                tick.label = (v > 0 ? "+" : "") + formatNsAtStep(v, step);
                if (v == 0) tick.label = "0";
            }
        }
        axis.ticks.push_back(tick);
        if (axis.ticks.size() > 4000) break; // never: the step keeps ticks ≥ minLabelPx/5 apart
    }
    return axis;
}

} // namespace prism::ui
