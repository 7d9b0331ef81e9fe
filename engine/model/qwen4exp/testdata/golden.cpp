// Writes golden.json for the qwen4exp package's tests: libstdc++'s
// std::partial_sort with ggml-cpu's cmp_top_k (a > b) on inputs full of
// ties, and the PLE n-gram hash rows of llm_graph_input_ple::set_input.
// Build and run by hand (g++ -O2 -o /tmp/golden golden.cpp && /tmp/golden > golden.json).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

struct cmp_top_k {
    const float * data;
    bool operator()(int32_t a, int32_t b) const { return data[a] > data[b]; }
};

int main() {
    std::mt19937_64 rng(12345);
    printf("{\"partial_sort\": [\n");
    for (int c = 0; c < 300; ++c) {
        int n = 1 + rng() % 300;
        int k = 1 + rng() % n;
        int distinct = 1 + rng() % 12;
        std::vector<float> v(n);
        for (auto & x : v) x = (float) (rng() % distinct) * 0.5f;
        if (c % 3 == 0) { // block-constant runs, as QSA's cell scores
            int r = 1 + rng() % 8;
            for (int j = 0; j < n; ++j) v[j] = v[j / r * r];
        }
        std::vector<int32_t> idx(n);
        for (int j = 0; j < n; ++j) idx[j] = j;
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), cmp_top_k{v.data()});
        printf("{\"k\": %d, \"v\": [", k);
        for (int j = 0; j < n; ++j) printf("%s%g", j ? "," : "", v[j]);
        printf("], \"out\": [");
        for (int j = 0; j < k; ++j) printf("%s%d", j ? "," : "", idx[j]);
        printf("]}%s\n", c + 1 < 300 ? "," : "");
    }
    printf("],\n\"ple\": [\n");
    for (int c = 0; c < 40; ++c) {
        const int64_t n_gram = 2 + rng() % 4, per_gram = 1 + rng() % 3, n_heads = (n_gram - 1) * per_gram;
        const int64_t eos = rng() % 50;
        std::vector<uint64_t> mult(n_gram);
        for (auto & m : mult) m = rng();
        std::vector<uint32_t> off(n_heads), voc(n_heads);
        uint32_t o = 0;
        for (int64_t h = 0; h < n_heads; ++h) { voc[h] = 1 + rng() % 1000; off[h] = o; o += voc[h]; }
        const int n_tok = 1 + rng() % 40;
        std::vector<int32_t> toks(n_tok);
        for (auto & t : toks) t = rng() % 60;
        std::vector<int32_t> idx(n_heads * n_tok);
        const int64_t n_prev = n_gram - 1;
        for (int64_t i = 0; i < n_tok; ++i) {
            std::vector<int64_t> ctx(n_gram);
            ctx[0] = toks[i];
            bool cut = false;
            for (int64_t s = 1; s < n_gram; ++s) {
                const int32_t t = cut || i - s < 0 ? -1 : toks[i - s];
                cut = cut || t < 0 || t == eos;
                ctx[s] = cut ? eos : t;
            }
            (void) n_prev;
            for (int64_t n = 2; n <= n_gram; ++n) {
                uint64_t mixed = (uint64_t) ctx[0] * mult[0];
                for (int64_t j = 1; j < n; ++j) mixed ^= (uint64_t) ctx[j] * mult[j];
                const int64_t base = (n - 2) * per_gram;
                for (int64_t g = 0; g < per_gram; ++g) {
                    const int64_t h = base + g;
                    idx[i * n_heads + h] = (int32_t) (mixed % voc[h] + off[h]);
                }
            }
        }
        printf("{\"ngram\": %lld, \"per_ngram\": %lld, \"eos\": %lld, \"mult\": [", (long long) n_gram, (long long) per_gram, (long long) eos);
        for (int64_t j = 0; j < n_gram; ++j) printf("%s\"%llu\"", j ? "," : "", (unsigned long long) mult[j]);
        printf("], \"offsets\": [");
        for (int64_t h = 0; h < n_heads; ++h) printf("%s%u", h ? "," : "", off[h]);
        printf("], \"vocab\": [");
        for (int64_t h = 0; h < n_heads; ++h) printf("%s%u", h ? "," : "", voc[h]);
        printf("], \"tokens\": [");
        for (int j = 0; j < n_tok; ++j) printf("%s%d", j ? "," : "", toks[j]);
        printf("], \"rows\": [");
        for (size_t j = 0; j < idx.size(); ++j) printf("%s%d", j ? "," : "", idx[j]);
        printf("]}%s\n", c + 1 < 40 ? "," : "");
    }
    printf("]}\n");
}
