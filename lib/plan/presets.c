/* lib/plan/presets.c — built-in model specs, as data.
 *
 * Every entry is copied from the model's config.json (the URL in `source`);
 * parameter counts are NOT stored for language models: they are computed from
 * the shape (lib/plan/tensors.c) and the tests check them against the counts
 * the publishers state (e.g. Qwen2.5-7B: 7,615,616,512). The preset's hf_repo
 * is the instruct variant users serve; base and instruct share the shape.
 *
 * Diffusion pipelines have no shape formula here: their component counts are
 * the published (approximate) figures named in `source`.
 */
#include <string.h>

#include "plan_internal.h"

#define HF(repo) "https://huggingface.co/" repo "/blob/main/config.json"

/* Shorthands for the table: a dense decoder and its variations. */
#define LLM(k, disp, repo, src, mt) \
    .kind = QT_SPEC_LLM, .key = k, .display = disp, .hf_repo = repo, .source = src, .arch = mt
#define SHAPE(vocab, embd, layers, heads, kv, hd, ff, ctx) \
    .n_vocab = vocab, .n_embd = embd, .n_layer = layers, .n_head = heads, .n_head_kv = kv, .head_dim = hd, \
    .n_ff = ff, .n_ctx_train = ctx

static const qt_model_spec presets[] = {
    /* ---- Qwen2.5: q/k/v biases; 0.5B-3B tie embeddings. Context: native 32,768 (YaRN extends 7B+). */
    {LLM("qwen2.5-0.5b", "Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct", HF("Qwen/Qwen2.5-0.5B-Instruct"), "qwen2"),
     SHAPE(151936, 896, 24, 14, 2, 64, 4864, 32768), .tie_embeddings = true, .attn_bias = true},
    {LLM("qwen2.5-1.5b", "Qwen2.5-1.5B", "Qwen/Qwen2.5-1.5B-Instruct", HF("Qwen/Qwen2.5-1.5B-Instruct"), "qwen2"),
     SHAPE(151936, 1536, 28, 12, 2, 128, 8960, 32768), .tie_embeddings = true, .attn_bias = true},
    {LLM("qwen2.5-3b", "Qwen2.5-3B", "Qwen/Qwen2.5-3B-Instruct", HF("Qwen/Qwen2.5-3B-Instruct"), "qwen2"),
     SHAPE(151936, 2048, 36, 16, 2, 128, 11008, 32768), .tie_embeddings = true, .attn_bias = true},
    {LLM("qwen2.5-7b", "Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct", HF("Qwen/Qwen2.5-7B-Instruct"), "qwen2"),
     SHAPE(152064, 3584, 28, 28, 4, 128, 18944, 32768), .attn_bias = true},
    {LLM("qwen2.5-14b", "Qwen2.5-14B", "Qwen/Qwen2.5-14B-Instruct", HF("Qwen/Qwen2.5-14B-Instruct"), "qwen2"),
     SHAPE(152064, 5120, 48, 40, 8, 128, 13824, 32768), .attn_bias = true},
    {LLM("qwen2.5-32b", "Qwen2.5-32B", "Qwen/Qwen2.5-32B-Instruct", HF("Qwen/Qwen2.5-32B-Instruct"), "qwen2"),
     SHAPE(152064, 5120, 64, 40, 8, 128, 27648, 32768), .attn_bias = true},
    {LLM("qwen2.5-72b", "Qwen2.5-72B", "Qwen/Qwen2.5-72B-Instruct", HF("Qwen/Qwen2.5-72B-Instruct"), "qwen2"),
     SHAPE(152064, 8192, 80, 64, 8, 128, 29568, 32768), .attn_bias = true},

    /* ---- Qwen3: head_dim 128 set explicitly (NOT hidden/heads: Qwen3-0.6B has 16 heads of a
     * 1024 hidden, so hidden/heads would say 64 and halve the KV cache), q/k RMSNorm. */
    {LLM("qwen3-0.6b", "Qwen3-0.6B", "Qwen/Qwen3-0.6B", HF("Qwen/Qwen3-0.6B"), "qwen3"),
     SHAPE(151936, 1024, 28, 16, 8, 128, 3072, 40960), .tie_embeddings = true, .qk_norm = true},
    {LLM("qwen3-1.7b", "Qwen3-1.7B", "Qwen/Qwen3-1.7B", HF("Qwen/Qwen3-1.7B"), "qwen3"),
     SHAPE(151936, 2048, 28, 16, 8, 128, 6144, 40960), .tie_embeddings = true, .qk_norm = true},
    {LLM("qwen3-4b", "Qwen3-4B", "Qwen/Qwen3-4B", HF("Qwen/Qwen3-4B"), "qwen3"),
     SHAPE(151936, 2560, 36, 32, 8, 128, 9728, 40960), .tie_embeddings = true, .qk_norm = true},
    {LLM("qwen3-8b", "Qwen3-8B", "Qwen/Qwen3-8B", HF("Qwen/Qwen3-8B"), "qwen3"),
     SHAPE(151936, 4096, 36, 32, 8, 128, 12288, 40960), .qk_norm = true},
    {LLM("qwen3-14b", "Qwen3-14B", "Qwen/Qwen3-14B", HF("Qwen/Qwen3-14B"), "qwen3"),
     SHAPE(151936, 5120, 40, 40, 8, 128, 17408, 40960), .qk_norm = true},
    {LLM("qwen3-32b", "Qwen3-32B", "Qwen/Qwen3-32B", HF("Qwen/Qwen3-32B"), "qwen3"),
     SHAPE(151936, 5120, 64, 64, 8, 128, 25600, 40960), .qk_norm = true},
    /* MoE: 128 experts of width 768, 8 routed per token, every layer sparse (decoder_sparse_step 1). */
    {LLM("qwen3-30b-a3b", "Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", HF("Qwen/Qwen3-30B-A3B"), "qwen3_moe"),
     SHAPE(151936, 2048, 48, 32, 4, 128, 6144, 40960), .qk_norm = true,
     .n_expert = 128, .n_expert_used = 8, .n_ff_expert = 768},

    /* ---- Llama 3.1 / 3.2 (3.2 ties embeddings; 3.2-1B has head_dim 64). */
    {LLM("llama-3.1-8b", "Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", HF("meta-llama/Llama-3.1-8B-Instruct"), "llama"),
     SHAPE(128256, 4096, 32, 32, 8, 128, 14336, 131072)},
    {LLM("llama-3.1-70b", "Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", HF("meta-llama/Llama-3.1-70B-Instruct"), "llama"),
     SHAPE(128256, 8192, 80, 64, 8, 128, 28672, 131072)},
    {LLM("llama-3.1-405b", "Llama-3.1-405B", "meta-llama/Llama-3.1-405B-Instruct", HF("meta-llama/Llama-3.1-405B-Instruct"), "llama"),
     SHAPE(128256, 16384, 126, 128, 8, 128, 53248, 131072)},
    {LLM("llama-3.2-1b", "Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct", HF("meta-llama/Llama-3.2-1B-Instruct"), "llama"),
     SHAPE(128256, 2048, 16, 32, 8, 64, 8192, 131072), .tie_embeddings = true},
    {LLM("llama-3.2-3b", "Llama-3.2-3B", "meta-llama/Llama-3.2-3B-Instruct", HF("meta-llama/Llama-3.2-3B-Instruct"), "llama"),
     SHAPE(128256, 3072, 28, 24, 8, 128, 8192, 131072), .tie_embeddings = true},

    /* ---- Mistral 7B v0.3 (sliding_window null in v0.3) and Mixtral 8x7B (8 experts, top 2). */
    {LLM("mistral-7b", "Mistral-7B-v0.3", "mistralai/Mistral-7B-Instruct-v0.3", HF("mistralai/Mistral-7B-Instruct-v0.3"), "mistral"),
     SHAPE(32768, 4096, 32, 32, 8, 128, 14336, 32768)},
    {LLM("mixtral-8x7b", "Mixtral-8x7B", "mistralai/Mixtral-8x7B-Instruct-v0.1", HF("mistralai/Mixtral-8x7B-Instruct-v0.1"), "mixtral"),
     SHAPE(32000, 4096, 32, 32, 8, 128, 14336, 32768),
     .n_expert = 8, .n_expert_used = 2, .n_ff_expert = 14336},

    /* ---- Gemma 2: head_dim set explicitly (9B: 16 x 256 = 4096 != hidden 3584), four norms per
     * layer, tied embeddings, and every even layer is local attention with a 4096-token window
     * (transformers Gemma2: is_sliding = not layer_idx % 2). */
    {LLM("gemma-2-9b", "Gemma-2-9B", "google/gemma-2-9b-it", HF("google/gemma-2-9b-it"), "gemma2"),
     SHAPE(256000, 3584, 42, 16, 8, 256, 14336, 8192), .tie_embeddings = true, .norms_per_layer = 4,
     .sliding_window = 4096, .swa_period = 2},
    {LLM("gemma-2-27b", "Gemma-2-27B", "google/gemma-2-27b-it", HF("google/gemma-2-27b-it"), "gemma2"),
     SHAPE(256000, 4608, 46, 32, 16, 128, 36864, 8192), .tie_embeddings = true, .norms_per_layer = 4,
     .sliding_window = 4096, .swa_period = 2},

    /* ---- Phi-3 / Phi-4 (fused qkv and gate_up in the checkpoint; same parameter count).
     * Phi-3's config says sliding_window 2047, which runtimes do not all honour: treated as full
     * attention here (the conservative figure). */
    {LLM("phi-3-mini", "Phi-3-mini-4k", "microsoft/Phi-3-mini-4k-instruct", HF("microsoft/Phi-3-mini-4k-instruct"), "phi3"),
     SHAPE(32064, 3072, 32, 32, 32, 96, 8192, 4096)},
    {LLM("phi-3-medium", "Phi-3-medium-4k", "microsoft/Phi-3-medium-4k-instruct", HF("microsoft/Phi-3-medium-4k-instruct"), "phi3"),
     SHAPE(32064, 5120, 40, 40, 10, 128, 17920, 4096)},
    {LLM("phi-4", "Phi-4", "microsoft/phi-4", HF("microsoft/phi-4"), "phi3"),
     SHAPE(100352, 5120, 40, 40, 10, 128, 17920, 16384)},

    /* ---- DeepSeek-V3: multi-head latent attention (the cache holds kv_lora_rank + rope dims per
     * layer, one latent for all heads) and MoE (256 routed of width 2048, top 8, one shared
     * expert, first 3 layers dense). 671B without the multi-token-prediction module. */
    {LLM("deepseek-v3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3", HF("deepseek-ai/DeepSeek-V3"), "deepseek_v3"),
     SHAPE(129280, 7168, 61, 128, 128, 192, 18432, 163840),
     .n_expert = 256, .n_expert_used = 8, .n_ff_expert = 2048, .n_expert_shared = 1, .n_dense_lead = 3,
     .q_lora_rank = 1536, .kv_lora_rank = 512, .qk_rope_dim = 64, .qk_nope_dim = 128, .v_head_dim = 128},

    /* ---- Diffusion pipelines: published component sizes (approximate). */
    {.kind = QT_SPEC_DIFFUSION, .key = "sdxl", .display = "Stable Diffusion XL 1.0",
     .hf_repo = "stabilityai/stable-diffusion-xl-base-1.0", .arch = "sdxl",
     .source = "SDXL report (Podell et al. 2023): 2.6B UNet, 817M text encoders; diffusers model cards",
     .n_components = 4,
     .comp = {{"unet", "UNet denoiser", QT_COMPONENT_DENOISER, 2567000000ull},
              {"text_encoder", "CLIP ViT-L/14 text encoder", QT_COMPONENT_TEXT_ENCODER, 123000000ull},
              {"text_encoder_2", "OpenCLIP ViT-bigG/14 text encoder", QT_COMPONENT_TEXT_ENCODER, 695000000ull},
              {"vae", "VAE (4-channel latents)", QT_COMPONENT_VAE, 84000000ull}}},
    {.kind = QT_SPEC_DIFFUSION, .key = "sd3.5-large", .display = "Stable Diffusion 3.5 Large",
     .hf_repo = "stabilityai/stable-diffusion-3.5-large", .arch = "sd3",
     .source = "stabilityai/stable-diffusion-3.5-large model card: 8.1B MMDiT; CLIP-L, CLIP-G, T5-XXL encoder",
     .n_components = 5,
     .comp = {{"transformer", "MMDiT denoiser", QT_COMPONENT_DENOISER, 8100000000ull},
              {"text_encoder", "CLIP ViT-L/14 text encoder", QT_COMPONENT_TEXT_ENCODER, 124000000ull},
              {"text_encoder_2", "OpenCLIP ViT-bigG/14 text encoder", QT_COMPONENT_TEXT_ENCODER, 695000000ull},
              {"text_encoder_3", "T5-XXL encoder", QT_COMPONENT_TEXT_ENCODER, 4760000000ull},
              {"vae", "VAE (16-channel latents)", QT_COMPONENT_VAE, 84000000ull}}},
    {.kind = QT_SPEC_DIFFUSION, .key = "flux.1-dev", .display = "FLUX.1-dev",
     .hf_repo = "black-forest-labs/FLUX.1-dev", .arch = "flux",
     .source = "black-forest-labs/FLUX.1-dev model card: 12B rectified-flow transformer; CLIP-L, T5-XXL encoder",
     .n_components = 4,
     .comp = {{"transformer", "Flux transformer denoiser", QT_COMPONENT_DENOISER, 11900000000ull},
              {"text_encoder", "CLIP ViT-L/14 text encoder", QT_COMPONENT_TEXT_ENCODER, 123000000ull},
              {"text_encoder_2", "T5-XXL encoder", QT_COMPONENT_TEXT_ENCODER, 4760000000ull},
              {"vae", "VAE (16-channel latents)", QT_COMPONENT_VAE, 84000000ull}}},
};
static const int n_presets = (int)(sizeof presets / sizeof presets[0]);

/* Accepted spellings besides the key (compared on letters and digits). */
static const char *const preset_aliases[][2] = {
    {"qwen2.5-7b", "qwen2.5-7b-instruct"},
    {"mistral-7b", "mistral-7b-v0.3,mistral-7b-instruct"},
    {"mixtral-8x7b", "mixtral,mixtral-8x7b-instruct"},
    {"deepseek-v3", "deepseek-r1,deepseekv3"},
    {"sdxl", "stable-diffusion-xl,sdxl-base"},
    {"sd3.5-large", "sd3.5,stable-diffusion-3.5-large"},
    {"flux.1-dev", "flux,flux-dev"},
    {"phi-3-mini", "phi-3-mini-4k-instruct,phi3-mini"},
    {"phi-3-medium", "phi-3-medium-4k-instruct"},
};

int qt_plan_preset_count(void) { return n_presets; }

const qt_model_spec *qt_plan_preset_get(int i) {
    return (i >= 0 && i < n_presets) ? &presets[i] : NULL;
}

static const char *aliases_of(const char *key) {
    for (size_t i = 0; i < sizeof preset_aliases / sizeof preset_aliases[0]; i++)
        if (!strcmp(preset_aliases[i][0], key)) return preset_aliases[i][1];
    return NULL;
}

/* Hugging Face repo ids and instruct suffixes map to the same shape:
 * "Qwen/Qwen2.5-7B-Instruct" -> "Qwen2.5-7B". */
static void strip_repo(const char *name, char *out, size_t n) {
    const char *slash = strrchr(name, '/');
    snprintf(out, n, "%s", slash ? slash + 1 : name);
    static const char *const suffixes[] = {"-instruct", "-it", "-chat", "-base", "-hf"};
    for (int again = 1; again;) {
        again = 0;
        size_t len = strlen(out);
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            size_t sl = strlen(suffixes[i]);
            if (len > sl && !strcasecmp(out + len - sl, suffixes[i])) {
                out[len - sl] = 0;
                again = 1;
                break;
            }
        }
    }
}

const qt_model_spec *qt_plan_preset_find(const char *name) {
    if (!name || !*name) return NULL;
    char bare[128];
    strip_repo(name, bare, sizeof bare);
    for (int pass = 0; pass < 2; pass++) {
        const char *want = pass ? bare : name;
        for (int i = 0; i < n_presets; i++) {
            const qt_model_spec *p = &presets[i];
            if (qt__name_in_list(want, p->key, aliases_of(p->key)) || qt__name_in_list(want, p->hf_repo, NULL) ||
                qt__name_in_list(want, p->display, NULL))
                return p;
        }
    }
    return NULL;
}
