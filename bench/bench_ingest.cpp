// Ingest speed of the flows.csv reader, plain and gzip, on one core.
// Input: $LLMPRISM_BENCH_CAPTURE (a capture folder, a flows.csv or a flows.csv.gz); without it a synthetic
// 5M-row flows.csv is generated into /tmp once and reused. The missing plain or gzip twin of the input is
// made next to it in /tmp, also once.
// Reports records/s (items_per_second), CSV MB/s (bytes_per_second, uncompressed text for both) and the
// table's memory per record (bytes_per_record = FlowTable::memoryBytes() / size()).
#include "io/capture.h"

#include <benchmark/benchmark.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kSyntheticRows = 5'000'000;

struct Inputs {
    std::string plain;
    std::string gz;
    std::uint64_t csvBytes = 0;
};

// Writes through a temp file and a rename, so an interrupted or concurrent run never leaves half a file.
void writeAtomically(const std::string& path, const std::function<void(const std::string&)>& write) {
    std::string tmp = path + ".tmp" + std::to_string(::getpid());
    write(tmp);
    fs::rename(tmp, path);
}

// A cluster of 360 hosts x 8 rail NICs plus storage servers: 90% RoCE, 10% TCP noise, times increasing.
void generateSynthetic(const std::string& path) {
    writeAtomically(path, [](const std::string& tmp) {
        std::FILE* f = std::fopen(tmp.c_str(), "wb");
        if (!f) throw std::runtime_error("cannot write " + tmp);
        static char buffer[1 << 20];
        std::setvbuf(f, buffer, _IOFBF, sizeof buffer);
        std::fputs("start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n", f);
        std::mt19937_64 rng(42);
        const std::uint64_t sizes[] = {4096, 65536, 1048576, 8388608, 16777216, 33554432};
        std::int64_t t = 1'700'000'000'000'000'000;
        for (std::size_t i = 0; i < kSyntheticRows; ++i) {
            t += std::int64_t(rng() % 2000);
            std::uint64_t r = rng();
            unsigned host = unsigned(r % 360), rail = unsigned((r >> 12) % 8), peer = unsigned((r >> 20) % 360);
            bool roce = (r >> 32) % 10 != 0;
            std::uint64_t bytes = sizes[(r >> 40) % 6];
            std::int64_t dur = std::int64_t(bytes / 40 + (r >> 48) % 5000);
            if (roce)
                std::fprintf(f, "%lld,%lld,10.%u.%u.%u,10.%u.%u.%u,%u,4791,17,%llu,%llu\n", (long long)t,
                             (long long)(t + dur), rail, host >> 8, host & 255, rail, peer >> 8, peer & 255,
                             49152 + unsigned(r % 16384), (unsigned long long)bytes,
                             (unsigned long long)(bytes / 4096 + 1));
            else
                std::fprintf(f, "%lld,%lld,10.%u.%u.%u,10.200.0.%u,%u,2049,6,%llu,%llu\n", (long long)t,
                             (long long)(t + dur), rail, host >> 8, host & 255, 1 + peer % 20,
                             32768 + unsigned(r % 16384), (unsigned long long)(bytes / 16),
                             (unsigned long long)(bytes / 16 / 1448 + 1));
        }
        if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + tmp);
    });
}

void gzipFile(const std::string& from, const std::string& to) {
    writeAtomically(to, [&](const std::string& tmp) {
        std::FILE* in = std::fopen(from.c_str(), "rb");
        gzFile out = gzopen(tmp.c_str(), "wb6");
        if (!in || !out) throw std::runtime_error("cannot gzip " + from);
        std::vector<char> buf(1 << 20);
        while (std::size_t n = std::fread(buf.data(), 1, buf.size(), in)) gzwrite(out, buf.data(), unsigned(n));
        std::fclose(in);
        if (gzclose(out) != Z_OK) throw std::runtime_error("cannot write " + tmp);
    });
}

void gunzipFile(const std::string& from, const std::string& to) {
    writeAtomically(to, [&](const std::string& tmp) {
        gzFile in = gzopen(from.c_str(), "rb");
        std::FILE* out = std::fopen(tmp.c_str(), "wb");
        if (!in || !out) throw std::runtime_error("cannot gunzip " + from);
        std::vector<char> buf(1 << 20);
        int n = 0;
        while ((n = gzread(in, buf.data(), unsigned(buf.size()))) > 0) std::fwrite(buf.data(), 1, std::size_t(n), out);
        gzclose(in);
        if (std::fclose(out) != 0) throw std::runtime_error("cannot write " + tmp);
    });
}

bool isGzip(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    unsigned char m[2] = {0, 0};
    bool gz = std::fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b;
    std::fclose(f);
    return gz;
}

// Up to date when it exists and is not older than its source.
bool fresh(const std::string& path, const std::string& source) {
    std::error_code ec;
    return fs::exists(path, ec) && fs::last_write_time(path, ec) >= fs::last_write_time(source, ec);
}

Inputs prepare() {
    Inputs in;
    std::string source;
    if (const char* env = std::getenv("LLMPRISM_BENCH_CAPTURE"); env && *env) {
        fs::path p(env);
        if (fs::is_directory(p)) p = fs::exists(p / "flows.csv") ? p / "flows.csv" : p / "flows.csv.gz";
        if (!fs::exists(p)) throw std::runtime_error("LLMPRISM_BENCH_CAPTURE: no flows file at " + p.string());
        source = fs::absolute(p).string();
    } else {
        source = "/tmp/llmprism-bench-ingest-5M.csv";
        if (!fs::exists(source)) generateSynthetic(source);
    }
    // Twins go to /tmp, named after the source path so different captures do not collide.
    std::string twin = "/tmp/llmprism-bench-ingest-" + std::to_string(std::hash<std::string>{}(source));
    if (isGzip(source)) {
        in.gz = source;
        in.plain = twin + ".csv";
        if (!fresh(in.plain, source)) gunzipFile(source, in.plain);
    } else {
        in.plain = source;
        in.gz = source.rfind("/tmp/llmprism-bench-ingest-", 0) == 0 ? source + ".gz" : twin + ".csv.gz";
        if (!fresh(in.gz, source)) gzipFile(source, in.gz);
    }
    in.csvBytes = fs::file_size(in.plain);
    return in;
}

const Inputs& inputs() {
    static const Inputs in = prepare();
    return in;
}

void ingest(benchmark::State& state, bool gz, unsigned threads) {
    const Inputs& in = inputs();
    const std::string& path = gz ? in.gz : in.plain;
    std::size_t records = 0;
    double bytesPerRecord = 0;
    for (auto _ : state) {
        prism::LoadDiagnostics diag;
        prism::LoadOptions options;
        options.threads = threads; // 0: one per core (plain files parse in parallel parts)
        prism::FlowTable table = prism::readFlowsCsv(path, options, diag);
        records = table.size();
        bytesPerRecord = records ? double(table.memoryBytes()) / double(records) : 0.0;
        benchmark::DoNotOptimize(&table.startNs);
    }
    state.SetItemsProcessed(std::int64_t(records) * state.iterations());
    state.SetBytesProcessed(std::int64_t(in.csvBytes) * state.iterations());
    state.counters["records"] = double(records);
    state.counters["bytes_per_record"] = bytesPerRecord;
    state.SetLabel(path);
}

BENCHMARK_CAPTURE(ingest, plain, false, 0)->Unit(benchmark::kMillisecond)->MinTime(3.0);
BENCHMARK_CAPTURE(ingest, plain_one_thread, false, 1)->Unit(benchmark::kMillisecond)->MinTime(3.0);
BENCHMARK_CAPTURE(ingest, gzip, true, 0)->Unit(benchmark::kMillisecond)->MinTime(3.0);
BENCHMARK_CAPTURE(ingest, gzip_one_thread, true, 1)->Unit(benchmark::kMillisecond)->MinTime(3.0);

} // namespace

BENCHMARK_MAIN();
