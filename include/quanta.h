/* quanta.h — the public API of libquanta. Every public name starts with qt_ / QT_.
 *
 * One header per subsystem under quanta/; this one includes them all.
 */
#ifndef QUANTA_H
#define QUANTA_H

#include "quanta/core.h"
#include "quanta/num.h"
#include "quanta/quant.h"
#include "quanta/ct.h"
#include "quanta/metrics.h"
#include "quanta/formats.h"
#include "quanta/model.h"
#include "quanta/template.h"
#include "quanta/tokenizer.h"
#include "quanta/gguf.h"
#include "quanta/imatrix.h"
#include "quanta/llama2c.h"
#include "quanta/safetensors.h"
#include "quanta/hf.h"
#include "quanta/quantize_ct.h"
#include "quanta/plan.h"
#include "quanta/engine.h"
#include "quanta/gptq.h"
#include "quanta/smooth.h"
#include "quanta/quantize.h"
#include "quanta/eval.h"
#include "quanta/tasks.h"
#include "quanta/serve.h"
#include "quanta/loadtest.h"
#include "quanta/synth.h"
#include "quanta/bench.h"
#include "quanta/quantize.h"

#endif
