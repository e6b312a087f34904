#include "analysis/bocd.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <math.h> // lgamma_r: std::lgamma writes the global signgam, a data race in worker threads
#include <numbers>
#include <stdexcept>
#include <string>

namespace prism {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void validate(const BocdParams& p)
{
    auto fail = [](const std::string& what) { throw std::invalid_argument("BOCD: " + what); };
    if (!(p.lambda > 1.0) || !std::isfinite(p.lambda))
        fail("lambda must be finite and > 1");
    if (!(p.kappa0 > 0.0) || !(p.alpha0 > 0.0) || !(p.beta0 > 0.0) || !std::isfinite(p.mu0)
        || !std::isfinite(p.kappa0) || !std::isfinite(p.alpha0) || !std::isfinite(p.beta0))
        fail("prior needs finite mu0 and kappa0, alpha0, beta0 > 0");
    if (!(p.pruneThreshold >= 0.0 && p.pruneThreshold < 1.0))
        fail("pruneThreshold must be in [0, 1)");
    if (!(p.cpThreshold >= 0.0 && p.cpThreshold <= 1.0))
        fail("cpThreshold must be in [0, 1]");
}

// The series the model sees: z-scored, or checked against overflow.
std::vector<double> prepared(std::span<const double> x, const BocdParams& p)
{
    for (std::size_t i = 0; i < x.size(); ++i)
        if (!std::isfinite(x[i]))
            throw std::invalid_argument("BOCD: non-finite value at index " + std::to_string(i));
    if (p.standardize)
        return zscore(x);
    // The model squares deviations: beyond this they overflow (z-scored data never comes close).
    for (std::size_t i = 0; i < x.size(); ++i)
        if (std::abs(x[i] - p.mu0) > 1e150)
            throw std::invalid_argument("BOCD: |value - mu0| > 1e150 at index " + std::to_string(i)
                                        + " (use standardize)");
    return {x.begin(), x.end()};
}

double logGamma(double a)
{
    int sign = 0;
    return ::lgamma_r(a, &sign);
}

// The recursion, one point at a time. After point t the kept run lengths r = 0..k-1 are the indices of the
// arrays: the posterior of the run (mean μ, rate β and log β; κ = κ0 + r and α = α0 + r/2 follow from r),
// log P(r | x[..t]) and P(r | x[..t]). A point reads these arrays and writes the next ones one run length up
// (r becomes r + 1, the prior enters at 0), then the two sets swap.
class Bocd {
public:
    Bocd(const BocdParams& p, std::size_t n)
        : m_p(p), m_n(n), m_h(1.0 / p.lambda), m_logH(-std::log(p.lambda)), m_log1mH(std::log1p(-1.0 / p.lambda))
    {
        m_out.cpProbability.assign(n, 0.0);
        m_out.startProbability.assign(n, 0.0);
        m_out.mapRunLength.assign(n, 0);
        if (p.segmentation) {
            m_best.assign(n + 2, 0.0);
            m_back.assign(n + 2, 0);
        }
        // Before the first point the (empty) run has probability 1.
        m_cur.fit(1);
        m_cur.mu[0] = p.mu0;
        m_cur.beta[0] = p.beta0;
        m_cur.logBeta[0] = std::log(p.beta0);
        m_cur.logR[0] = 0.0;
        m_cur.prob[0] = 1.0;
    }

    void step(std::size_t t, double x)
    {
        prune();
        update(t, x);
        const std::size_t k = m_k;
        m_out.maxRunLengthsKept = std::max(m_out.maxRunLengthsKept, k);
        m_totalKept += k;
        // Point i is read once its window [i-w, i+w] has `lag` successors; the last points at the end.
        const std::size_t delay = m_p.lag + m_p.window;
        if (t >= delay + 1)
            readPoint(t - delay, t);
        if (t + 1 == m_n)
            for (std::size_t i = t > delay ? t - delay + 1 : 1; i <= t; ++i)
                readPoint(i, t);
        if (m_p.segmentation)
            segment(t);
    }

    BocdResult finish()
    {
        m_out.meanRunLengthsKept = m_n ? double(m_totalKept) / double(m_n) : 0.0;
        // One change per maximal run above the threshold, where the exact start is most probable.
        const auto& cp = m_out.cpProbability;
        const auto& start = m_out.startProbability;
        for (std::size_t i = 0; i < m_n;) {
            if (!(cp[i] > m_p.cpThreshold)) {
                ++i;
                continue;
            }
            std::size_t at = i;
            for (; i < m_n && cp[i] > m_p.cpThreshold; ++i)
                if (start[i] > start[at])
                    at = i;
            m_out.changePoints.push_back(at);
        }
        if (m_p.segmentation && m_n > 0) {
            // Back from the end along the best path's segment starts; m_back[1] = 0: the series starts one.
            for (std::size_t k = m_n + 1;;) {
                const std::size_t s = m_back[k];
                m_out.segmentation.push_back(s);
                if (s == 0)
                    break;
                k = s;
            }
            std::reverse(m_out.segmentation.begin(), m_out.segmentation.end());
        }
        return std::move(m_out);
    }

private:
    struct Posterior {
        std::vector<double> mu, beta, logBeta, logR, prob;
        void fit(std::size_t k) // at least k run lengths
        {
            for (auto* v : {&mu, &beta, &logBeta, &logR, &prob})
                if (v->size() < k)
                    v->resize(k);
        }
    };

    // ocp's truncation: drop the longest run lengths while their summed probability (summed from the longest
    // down, in long double like R's cumsum) stays below the threshold, then apply the cap.
    void prune()
    {
        std::size_t keep = m_k;
        if (m_p.pruneThreshold > 0.0) {
            long double tail = 0.0L;
            for (; keep > 1; --keep) {
                tail += m_cur.prob[keep - 1];
                if (static_cast<double>(tail) >= m_p.pruneThreshold)
                    break;
            }
        }
        if (m_p.maxRunLength > 0)
            keep = std::min(keep, m_p.maxRunLength);
        m_k = keep;
    }

    // The posterior after x from the one before: every run grows with probability 1 - H times its predictive
    // density, a new run (length 0) starts with probability H. The arithmetic is kept out of the loops that
    // call libm, so that the compiler vectorizes it.
    void update(std::size_t t, double x)
    {
        const std::size_t k = m_k;
        growTables(k);
        m_next.fit(k + 1);
        if (m_joint.size() < k)
            m_joint.resize(k);
        const Posterior& c = m_cur;
        Posterior& nx = m_next;
        double* joint = m_joint.data();
        // The Student-t predictive of run length r: with the rate after x, β' = β + κ(x-μ)²/(2(κ+1)), its log
        // density is logC + α log β - (α+½) log β'; the mean moves to μ + (x-μ)/(κ+1).
        for (std::size_t r = 0; r < k; ++r) {
            const double d = x - c.mu[r];
            nx.beta[r + 1] = c.beta[r] + m_shrink[r] * d * d;
            nx.mu[r + 1] = c.mu[r] + d * m_invKappa1[r];
        }
        for (std::size_t r = 1; r <= k; ++r)
            nx.logBeta[r] = std::log(nx.beta[r]);
        for (std::size_t r = 0; r < k; ++r)
            joint[r] = c.logR[r] + (m_logC[r] + m_alpha[r] * c.logBeta[r] - (m_alpha[r] + 0.5) * nx.logBeta[r + 1]);
        // The normaliser relative to the largest joint. The first largest is the most probable run after x
        // (run length at + 1) unless the new run is at least as probable: ties go to the shorter run.
        double top = kNegInf;
        for (std::size_t r = 0; r < k; ++r)
            top = std::max(top, joint[r]);
        std::size_t at = 0;
        while (joint[at] != top)
            ++at;
        double sum = 0.0;
        for (std::size_t r = 0; r < k; ++r) {
            nx.prob[r + 1] = std::exp(joint[r] - top);
            sum += nx.prob[r + 1];
        }
        const double shift = m_log1mH - (top + std::log(sum));
        const double scale = (1.0 - m_h) / sum;
        for (std::size_t r = 0; r < k; ++r) {
            nx.logR[r + 1] = joint[r] + shift;
            nx.prob[r + 1] *= scale;
        }
        nx.mu[0] = m_p.mu0;
        nx.beta[0] = m_p.beta0;
        nx.logBeta[0] = std::log(m_p.beta0);
        nx.logR[0] = m_logH; // with a constant hazard P(r = 0) = H exactly
        nx.prob[0] = m_h;
        m_out.mapRunLength[t] = top + shift > m_logH ? at + 1 : 0;
        std::swap(m_cur, m_next);
        m_k = k + 1;
    }

    // Point i after point t: the segment starting at s holds x[s..t], run length t - s + 1. Sums the starts s
    // in [i-w, i+w] (not the series start, not past t, not pruned): run lengths rLo..rHi.
    void readPoint(std::size_t i, std::size_t t)
    {
        const std::size_t w = m_p.window;
        const std::size_t sLo = std::max<std::size_t>(1, i > w ? i - w : 0);
        const std::size_t sHi = std::min(i + w, t);
        const std::size_t rLo = t - sHi + 1;
        const std::size_t rHi = std::min(t - sLo + 1, m_k - 1); // rHi < rLo: all pruned
        const std::size_t rStart = t - i + 1;
        double sum = 0.0;
        for (std::size_t r = rLo; r <= rHi; ++r)
            sum += m_cur.prob[r];
        m_out.cpProbability[i] = std::min(sum, 1.0);
        m_out.startProbability[i] = rStart <= rHi ? m_cur.prob[rStart] : 0.0;
    }

    // ocp's findCPprobs after point t: the best path ending with a run of length r scores log P(r_t = r) plus
    // the best score at the run's start t+1-r (with the reference's one-step shift: m_best[j] is the best
    // score after point j - 2, 0 before). Ties: the longest run, i.e. the earliest start, as R's which.max.
    void segment(std::size_t t)
    {
        double top = kNegInf;
        std::size_t at = 0;
        for (std::size_t r = 0; r < m_k; ++r) {
            const double v = m_cur.logR[r] + m_best[t + 1 - r];
            if (v >= top) {
                top = v;
                at = r;
            }
        }
        m_best[t + 2] = top;
        m_back[t + 2] = t + 1 - at;
    }

    // The per-run-length constants up to run length size - 1 (κ = κ0 + r, α = α0 + r/2).
    void growTables(std::size_t size)
    {
        for (std::size_t r = m_logC.size(); r < size; ++r) {
            const double kappa = m_p.kappa0 + static_cast<double>(r);
            const double alpha = m_p.alpha0 + 0.5 * static_cast<double>(r);
            // log Γ(α+½)/Γ(α) - ½ log(2π(κ+1)/κ): the Student-t constant without the rate
            m_logC.push_back(logGamma(alpha + 0.5) - logGamma(alpha)
                             - 0.5 * std::log(2.0 * std::numbers::pi * (kappa + 1.0) / kappa));
            m_alpha.push_back(alpha);
            m_shrink.push_back(kappa / (2.0 * (kappa + 1.0)));
            m_invKappa1.push_back(1.0 / (kappa + 1.0));
        }
    }

    BocdParams m_p;
    std::size_t m_n;
    double m_h, m_logH, m_log1mH;
    Posterior m_cur, m_next;
    std::size_t m_k = 1; // run lengths kept
    std::vector<double> m_joint;
    std::vector<double> m_logC, m_alpha, m_shrink, m_invKappa1;
    std::vector<double> m_best;      // segmentation: ocp's probmaxes
    std::vector<std::size_t> m_back; // segmentation: start of the last segment of the path scored in m_best
    std::size_t m_totalKept = 0;
    BocdResult m_out;
};

} // namespace

std::vector<double> zscore(std::span<const double> x)
{
    const std::size_t n = x.size();
    std::vector<double> out(x.begin(), x.end());
    if (n == 0)
        return out;
    // R: colMeans (long double sum / n), sweep, then sqrt(sum(v^2) / max(1, n-1)) with a long double sum.
    long double sum = 0.0L;
    for (double v : x)
        sum += v;
    const double mean = static_cast<double>(sum / static_cast<long double>(n));
    long double squares = 0.0L;
    for (double& v : out) {
        v -= mean;
        squares += v * v;
    }
    const double sd = std::sqrt(static_cast<double>(squares) / static_cast<double>(std::max<std::size_t>(1, n - 1)));
    if (sd > 0.0) // R divides by 0 too (NaN, and ocp fails); an infinite sd gives zeros, as in R
        for (double& v : out)
            v /= sd;
    return out;
}

BocdResult runBocd(std::span<const double> x, const BocdParams& p)
{
    validate(p);
    const std::vector<double> data = prepared(x, p);
    Bocd bocd(p, data.size());
    for (std::size_t t = 0; t < data.size(); ++t)
        bocd.step(t, data[t]);
    return bocd.finish();
}

} // namespace prism
