// Paint speed of the Gantt timeline (ui/timeline_view.h) and open-to-first-paint of the `large` preset.
//
// Paint: a synthetic job of 1,024 ranks × 500 steps × 8 segments (4,096,000 segments; 4 PP stages, 8 DP
// groups of 32 per stage) rendered by TimelineView::render into a 1920×1080 QImage, uncached (the widget
// caches the rows image; this measures a full repaint, as after a zoom or a pan). Zoom levels: the whole job,
// 25 steps, a quarter of a step. Rows: compact (1 px: every rank on screen, the worst case) and normal
// (18 px). Also: building the level-of-detail index once per job.
//
// Open-to-first-paint: MainWindow::openPath on the `large` preset (simulated once into /tmp, or
// $LLMPRISM_BENCH_LARGE) until the timeline has painted the session; counters split load + analysis, view
// set-up and the first paint. Runs on the offscreen platform.
#if __has_include("timeline_view.h")
#include "capture_loader.h"
#include "main_window.h"
#include "sim/simulator.h"
#include "timeline_view.h"
#include "view_state.h"

#include "store/session.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <QSettings>
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace prism;
using namespace prism::ui;

namespace {

constexpr int kRanks = 1024, kSteps = 500, kStages = 4, kGroupsPerStage = 8;
constexpr std::int64_t kStepNs = 100'000'000; // 100 ms
constexpr std::int64_t kOrigin = 1'793'491'200'000'000'000;

// One step of one rank: forward compute, PP send, compute, PP receive, backward compute, waiting, DP sync,
// compute — 8 segments with jittered lengths that fill the step exactly.
std::shared_ptr<const AnalysisSession> syntheticSession() {
    auto s = std::make_shared<AnalysisSession>();
    s->source = "synthetic-1024x500";
    JobInfo job;
    job.id = "job-0";
    job.tp = 8;
    job.pp = kStages;
    job.dp = kRanks / kStages;
    JobTimeline tl;
    tl.startNs = kOrigin;
    tl.endNs = kOrigin + kSteps * kStepNs;
    for (int k = 0; k < kSteps; ++k) {
        StepInfo st{k, kOrigin + k * kStepNs, kOrigin + (k + 1) * kStepNs, k % 97 == 13};
        tl.steps.push_back(st);
    }
    job.steps = tl.steps;
    job.startNs = tl.startNs;
    job.endNs = tl.endNs;
    std::mt19937_64 rng(7);
    const SegmentKind pattern[8] = {SegmentKind::Compute, SegmentKind::PpSend,  SegmentKind::Compute,
                                    SegmentKind::PpRecv,  SegmentKind::Compute, SegmentKind::Wait,
                                    SegmentKind::DpSync,  SegmentKind::Compute};
    const double share[8] = {0.22, 0.03, 0.20, 0.03, 0.30, 0.07, 0.12, 0.03};
    tl.ranks.resize(kRanks);
    const int perStage = kRanks / kStages, perGroup = perStage / kGroupsPerStage;
    for (int r = 0; r < kRanks; ++r) {
        RankTimeline& rt = tl.ranks[std::size_t(r)];
        rt.stage = r / perStage;
        rt.dpGroup = rt.stage * kGroupsPerStage + (r % perStage) / perGroup;
        rt.label = "node-" + std::to_string(1000 + r / 8) + ":" + std::to_string(r % 8);
        rt.ip = "10." + std::to_string(r % 8) + "." + std::to_string(r / 256) + "." + std::to_string(r % 256);
        rt.segments.reserve(kSteps * 8);
        for (int k = 0; k < kSteps; ++k) {
            std::int64_t t = kOrigin + k * kStepNs;
            const std::int64_t end = t + kStepNs;
            for (int i = 0; i < 8; ++i) {
                const double jitter = 0.8 + 0.4 * double(rng() % 1000) / 1000.0;
                std::int64_t e = i == 7 ? end : std::min(end - (7 - i), t + std::int64_t(share[i] * jitter * kStepNs));
                e = std::max(e, t + 1);
                Segment seg;
                seg.startNs = t;
                seg.endNs = e;
                seg.kind = pattern[i];
                if (seg.kind == SegmentKind::PpSend || seg.kind == SegmentKind::PpRecv) {
                    seg.peer = std::uint32_t((r + perStage) % kRanks);
                    seg.bytes = 8 << 20;
                }
                rt.segments.push_back(seg);
                rt.maxSegmentNs = std::max(rt.maxSegmentNs, e - t);
                t = e;
            }
        }
    }
    s->analysis.report.jobs.push_back(job);
    s->analysis.jobs.emplace_back().timeline = std::move(tl);
    return s;
}

struct Fixture {
    SessionPtr session = syntheticSession();
    JobDataPtr data = std::make_shared<const JobData>(session, 0);
    TimelineView view{nullptr};
    Fixture() {
        view.resize(1920, 1080);
        view.setJobData(data);
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

// Zoom: 0 = whole job, 1 = 25 steps, 2 = a quarter of a step, 3 = 57 steps (the costliest mid zoom: just
// finer than the coarsest-but-one level of detail, so every visible segment is walked). Row height in px.
void BM_PaintTimeline(benchmark::State& state) {
    Fixture& f = fixture();
    const int zoom = int(state.range(0));
    f.view.setRowHeight(int(state.range(1)));
    const std::int64_t span = zoom == 0 ? kSteps * kStepNs
        : zoom == 1                     ? 25 * kStepNs
        : zoom == 2                     ? kStepNs / 4
                                        : 57 * kStepNs;
    const std::int64_t t0 = zoom == 0 ? kOrigin : kOrigin + 237 * kStepNs + kStepNs / 3;
    f.view.setRange(t0, t0 + span, false);
    QImage image(1920, 1080, QImage::Format_ARGB32_Premultiplied);
    for (auto _ : state) {
        QPainter p(&image);
        f.view.render(p, image.size(), false);
        p.end();
        benchmark::DoNotOptimize(image.constBits());
    }
    state.counters["segments"] = double(f.data->timeline().segmentCount());
    state.counters["rows_on_screen"] = double(std::min<std::size_t>(
        f.view.rows().size(), std::size_t(f.view.plotRect().height() / std::max(1, f.view.rowHeight()))));
    const char* names[] = {"full zoom-out", "mid zoom (25 steps)", "deep zoom (1/4 step)", "mid zoom (57 steps)"};
    state.SetLabel(std::string(names[zoom]) + ", rows " + std::to_string(state.range(1)) + " px");
}
BENCHMARK(BM_PaintTimeline)
    ->ArgsProduct({{0, 1, 3, 2}, {1, 18}})
    ->ArgNames({"zoom", "row_px"})
    ->Unit(benchmark::kMillisecond);

void BM_BuildLodIndex(benchmark::State& state) {
    Fixture& f = fixture();
    for (auto _ : state) {
        TimelineIndex index;
        index.build(f.data->timeline());
        benchmark::DoNotOptimize(index.levels());
        state.counters["index_MB"] = double(index.memoryBytes()) / 1e6;
    }
}
BENCHMARK(BM_BuildLodIndex)->Unit(benchmark::kMillisecond)->Iterations(3);

std::string largeCapture() {
    if (const char* env = std::getenv("LLMPRISM_BENCH_LARGE")) return env;
    const std::string dir = "/tmp/llmprism-bench-large";
    if (!std::filesystem::exists(dir + "/flows.csv") && !std::filesystem::exists(dir + "/flows.csv.gz")) {
        auto config = sim::makePreset("large", 1);
        const std::string tmp = dir + ".tmp" + std::to_string(::getpid());
        sim::writeCapture(sim::simulate(*config), tmp);
        std::filesystem::rename(tmp, dir);
    }
    return dir;
}

// Opens `path` in a fresh window and measures until the timeline's first paint after the session arrived.
void openToFirstPaint(benchmark::State& state, const QString& path) {
    for (auto _ : state) {
        MainWindow w;
        w.resize(1600, 1000);
        w.show();
        QApplication::processEvents();
        QElapsedTimer timer;
        qint64 loaded = -1, shown = -1, painted = -1;
        int paintsAtSession = -1;
        // The window's own handler of `finished` runs first and sets the session up; ours runs after it.
        QObject::connect(w.viewState(), &ViewState::sessionChanged, &w, [&] { loaded = timer.nsecsElapsed(); });
        QObject::connect(w.loader(), &CaptureLoader::finished, &w, [&] {
            shown = timer.nsecsElapsed();
            paintsAtSession = w.timeline()->paintCount();
        });
        timer.start();
        w.openPath(path);
        while (painted < 0) {
            QApplication::processEvents(QEventLoop::AllEvents, 5);
            if (paintsAtSession >= 0 && w.timeline()->paintCount() > paintsAtSession) painted = timer.nsecsElapsed();
            if (timer.elapsed() > 600'000) {
                state.SkipWithError("no first paint within 10 minutes");
                return;
            }
        }
        state.SetIterationTime(double(painted) / 1e9);
        state.counters["load_analysis_s"] = double(loaded) / 1e9;
        state.counters["views_setup_s"] = double(shown - loaded) / 1e9;
        state.counters["first_paint_s"] = double(painted - shown) / 1e9;
        state.counters["segments"] =
            w.timeline()->jobData() ? double(w.timeline()->jobData()->timeline().segmentCount()) : 0;
    }
}

void BM_OpenToFirstPaintLarge(benchmark::State& state) {
    openToFirstPaint(state, QString::fromStdString(largeCapture()));
}
BENCHMARK(BM_OpenToFirstPaintLarge)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// The same capture saved as a .prism session (made once next to it): open without re-analysis.
void BM_OpenSessionToFirstPaintLarge(benchmark::State& state) {
    const std::string capture = largeCapture();
    const std::string prism = capture + ".prism";
    if (!std::filesystem::exists(prism)) {
        Capture c = loadCapture(capture);
        Analysis a = runAnalysis(c);
        saveSession(prism, c, a, {});
    }
    openToFirstPaint(state, QString::fromStdString(prism));
}
BENCHMARK(BM_OpenSessionToFirstPaintLarge)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char** argv) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    QApplication app(argc, argv);
    QApplication::setOrganizationName("LLMPrismBench");
    QApplication::setApplicationName("bench_timeline_paint");
    QSettings().clear();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
#else
// Built without the GUI (LLMPRISM_BUILD_GUI=OFF): the timeline is not there to measure.
#include <cstdio>
int main() {
    std::puts("bench_timeline_paint needs the GUI build (-DLLMPRISM_BUILD_GUI=ON)");
    return 0;
}
#endif
