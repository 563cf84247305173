#!/usr/bin/env bash
# Start an OpenAI-compatible vLLM server for the Qwen3 backbones (configs/backbone/qwen3-*.yaml).
#
# vllm is an optional extra (pip install vllm, on a CUDA machine); memcore never imports it and
# talks to this server over HTTP only. See scripts/serve_vllm.sh --help.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/serve_vllm.sh [PRESET] [options] [-- extra vllm serve args]

Serves a Qwen3 model under the name a memcore backbone preset expects:
  qwen3-8b   Qwen/Qwen3-8B   -> --served-model-name qwen3-8b   (backbone=qwen3-8b)
  qwen3-14b  Qwen/Qwen3-14B  -> --served-model-name qwen3-14b  (backbone=qwen3-14b)
PRESET defaults to qwen3-8b.

options (defaults in brackets; each also reads the env var named):
  --model ID_OR_PATH        HF id or local dir to load [by preset]                 ($VLLM_MODEL)
  --port N                  [8000]                                                  ($VLLM_PORT)
  --host ADDR               [127.0.0.1; use 0.0.0.0 to serve other nodes]           ($VLLM_HOST)
  --max-model-len N         context window in tokens [32768 = Qwen3 native]         ($VLLM_MAX_MODEL_LEN)
  --tensor-parallel-size N  GPUs to shard over [1]                                  ($VLLM_TP)
  --gpu-memory-utilization F fraction of each GPU's memory vLLM may take [0.90]     ($VLLM_GPU_UTIL)
  --dtype D                 [auto]
  --reasoning               add --reasoning-parser qwen3 (only useful with thinking on, backbone.thinking=true:
                            the <think> part then arrives in reasoning_content, not in the answer)
  --dry-run                 print the vllm command and exit
  -h, --help                this text

Thinking: Qwen3 thinks by default. memcore turns it off per request (the backbone preset has
thinking: false, sent as chat_template_kwargs.enable_thinking=false), so no server flag is needed;
backbone.thinking=true turns it on. A reply's stray <think>…</think> block is stripped client-side.
API key: when $VLLM_API_KEY is set the server requires it (--api-key); memcore reads the same variable.
Sampling: vLLM applies the model's generation_config.json defaults (top_p/top_k) unless you pass
'-- --generation-config vllm'; memcore always sends temperature and max_tokens itself.

Then, in another shell:
  memcore-run backbone=qwen3-8b method=memcore dataset=locomo-mini
  MEMCORE_VLLM_URL=http://<host>:8000/v1 memcore-run -m experiment=paper_ablation
USAGE
}

preset="qwen3-8b"
model="${VLLM_MODEL:-}"
port="${VLLM_PORT:-8000}"
host="${VLLM_HOST:-127.0.0.1}"
max_len="${VLLM_MAX_MODEL_LEN:-32768}"
tp="${VLLM_TP:-1}"
gpu_util="${VLLM_GPU_UTIL:-0.90}"
dtype="auto"
reasoning=0
dry_run=0
extra=()

need_value() {  # option name, remaining arg count
  if [[ "$2" -lt 2 ]]; then
    echo "error: $1 needs a value (see --help)" >&2
    exit 2
  fi
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --reasoning) reasoning=1; shift ;;
    --model) need_value "$1" $#; model="$2"; shift 2 ;;
    --port) need_value "$1" $#; port="$2"; shift 2 ;;
    --host) need_value "$1" $#; host="$2"; shift 2 ;;
    --max-model-len) need_value "$1" $#; max_len="$2"; shift 2 ;;
    --tensor-parallel-size) need_value "$1" $#; tp="$2"; shift 2 ;;
    --gpu-memory-utilization) need_value "$1" $#; gpu_util="$2"; shift 2 ;;
    --dtype) need_value "$1" $#; dtype="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    qwen3-8b|qwen3-14b) preset="$1"; shift ;;
    -*) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) echo "error: unknown preset '$1'; known: qwen3-8b, qwen3-14b (or pass --model and edit a backbone preset)" >&2; exit 2 ;;
  esac
done

case "$preset" in
  qwen3-8b) default_model="Qwen/Qwen3-8B" ;;
  qwen3-14b) default_model="Qwen/Qwen3-14B" ;;
esac
model="${model:-$default_model}"

for pair in "port:$port" "max-model-len:$max_len" "tensor-parallel-size:$tp"; do
  if ! [[ "${pair#*:}" =~ ^[0-9]+$ ]]; then
    echo "error: --${pair%%:*} must be a positive integer, got '${pair#*:}'" >&2
    exit 2
  fi
done
if ! [[ "$gpu_util" =~ ^(0\.[0-9]*[1-9][0-9]*|1(\.0+)?)$ ]]; then
  echo "error: --gpu-memory-utilization must be a fraction in (0, 1], got '$gpu_util'" >&2
  exit 2
fi

cmd=(vllm serve "$model"
  --served-model-name "$preset"
  --host "$host" --port "$port"
  --max-model-len "$max_len"
  --tensor-parallel-size "$tp"
  --gpu-memory-utilization "$gpu_util"
  --dtype "$dtype")
if [[ -n "${VLLM_API_KEY:-}" ]]; then
  cmd+=(--api-key "$VLLM_API_KEY")
fi
if [[ "$reasoning" -eq 1 ]]; then
  cmd+=(--reasoning-parser qwen3)
fi
cmd+=("${extra[@]}")

if [[ "$dry_run" -eq 1 ]]; then
  # The key itself is never printed.
  printf '%q ' "${cmd[@]}" | sed -E 's/(--api-key )[^ ]+/\1***/'
  echo
  exit 0
fi

if ! command -v vllm >/dev/null 2>&1; then
  cat >&2 <<'MSG'
error: the vllm command is not installed. vLLM is an optional extra for GPU machines:
  pip install vllm            # needs CUDA; see https://docs.vllm.ai/en/latest/getting_started/installation/
or use another backbone: backbone=gpt-4o-mini (OpenAI API) or backbone=local (llama.cpp, CPU).
MSG
  exit 3
fi

echo "serving $model as '$preset' on http://$host:$port/v1 (backbone=$preset; MEMCORE_VLLM_URL=http://$host:$port/v1)" >&2
exec "${cmd[@]}"
