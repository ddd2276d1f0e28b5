"""The verifiers bridge of `gateway bench eval` (run as `python3 -c <this> CONFIG`): the
original's `verifiers_adapter.run_local_eval` up to the filing. It loads a verifiers
(v0) environment with `verifiers.load_environment`, runs its own rollout loop
(`Environment.evaluate_sync`) against an OpenAI-compatible endpoint, writes the
resumable results artifact (`results.jsonl` + `metadata.json`) when asked, and prints
ONE JSON document — {samples, metrics, resultsPath} in the original's shapes — on
the standard output it was given. Whatever the environment prints goes to stderr.

Filing the samples is the caller's (gateway-runner, Rust). Exit codes: 0 done, 3 a
package is missing (openai, verifiers), 4 the environment cannot be scored.
"""

import json
import os
import sys
import tempfile
import uuid
from pathlib import Path


def _get(obj, key, default=None):
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _as_text(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except Exception:
        return str(value)


def _rollouts(outputs):
    return _get(outputs, "outputs", []) or []


def samples_from_generate_outputs(outputs):
    rollouts = _rollouts(outputs)
    rpe = int(_get(_get(outputs, "metadata", {}) or {}, "rollouts_per_example", 1) or 1)
    if rpe <= 0:
        rpe = 1
    seen = {}
    samples = []
    for i, r in enumerate(rollouts):
        raw_example_id = _get(r, "example_id")
        example_id = str(raw_example_id if raw_example_id is not None else i // rpe)
        idx = seen.get(example_id, 0)
        seen[example_id] = idx + 1
        reward = _get(r, "reward")
        answer = _get(r, "answer")
        sample = {
            "exampleId": example_id,
            "rolloutIndex": idx,
            "prompt": _as_text(_get(r, "prompt")),
            "completion": _as_text(_get(r, "completion")),
            "answer": answer if isinstance(answer, str) else _as_text(answer),
            "reward": float(reward) if reward is not None else None,
            "score": float(reward) if reward is not None else None,
            "rewards": _get(r, "metrics") or {},
            "info": _get(r, "info") or {},
        }
        samples.append({k: make_serializable(v) for k, v in sample.items() if v is not None})
    return samples


def metrics_from_generate_outputs(outputs):
    rollouts = _rollouts(outputs)
    rewards = [float(_get(r, "reward")) for r in rollouts if _get(r, "reward") is not None]
    by_metric = {}
    for r in rollouts:
        for name, value in (_get(r, "metrics") or {}).items():
            if isinstance(value, (int, float)):
                by_metric.setdefault(name, []).append(float(value))

    def _mean(xs):
        return sum(xs) / len(xs) if xs else None

    return {
        "n": len(rollouts),
        "avg_reward": _mean(rewards),
        "metrics": {name: _mean(vals) for name, vals in by_metric.items()},
    }


def make_serializable(obj):
    try:
        json.dumps(obj)
        return obj
    except (TypeError, ValueError):
        if isinstance(obj, dict):
            return {k: make_serializable(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [make_serializable(v) for v in obj]
        return str(obj)


# ---- the results artifact: <output_dir>/evals/<env>--<model>/<run>/{results.jsonl,metadata.json}


def _load_outputs(path):
    f = Path(path) / "results.jsonl"
    if not f.exists():
        return []
    out = []
    for line in f.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except Exception:
            continue
        if isinstance(row, dict):
            out.append(row)
    return out


def _load_metadata(path):
    f = Path(path) / "metadata.json"
    if not f.exists():
        return {}
    try:
        data = json.loads(f.read_text())
        return data if isinstance(data, dict) else {}
    except Exception:
        return {}


def _results_root(output_dir, env_id, model):
    return Path(output_dir) / "evals" / f"{env_id}--{model.replace('/', '--')}"


def find_latest_incomplete(output_dir, env_id, model, num_examples, rollouts_per_example):
    root = _results_root(output_dir, env_id, model)
    if not root.exists():
        return None
    valid = lambda d: (d / "results.jsonl").exists() and (d / "metadata.json").exists()  # noqa: E731
    candidates = [d for d in root.iterdir() if d.is_dir() and valid(d)]
    candidates.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    total = num_examples * rollouts_per_example if num_examples > 0 else None
    for c in candidates:
        meta = _load_metadata(c)
        if meta.get("env_id") != env_id or meta.get("model") != model:
            continue
        if meta.get("rollouts_per_example") != rollouts_per_example:
            continue
        if meta.get("shuffle") != False or meta.get("shuffle_seed") != None:  # noqa: E711,E712 (as the original compares)
            continue
        counts = {}
        rpe = rollouts_per_example if rollouts_per_example > 0 else 1
        for row in _load_outputs(c):
            eid = row.get("example_id")
            if eid is None:
                continue
            counts[eid] = min(counts.get(eid, 0) + 1, rpe)
        if total is None or sum(counts.values()) < total:
            return c
    return None


def write_results(path, rollouts, config, metrics):
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "results.jsonl", "w") as fh:
        for row in rollouts:
            fh.write(json.dumps(make_serializable(row)) + "\n")
    metadata = {
        "env_id": config["envId"],
        "model": config["model"],
        "num_examples": config["numExamples"],
        "rollouts_per_example": config["rolloutsPerExample"],
        "shuffle": False,
        "shuffle_seed": None,
        "n": metrics.get("n"),
        "avg_reward": metrics.get("avg_reward"),
        "avg_metrics": metrics.get("metrics"),
    }
    fd, tmp = tempfile.mkstemp(dir=str(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(make_serializable(metadata), fh, indent=2)
        os.replace(tmp, str(path / "metadata.json"))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _adapt_client(client):
    try:
        from verifiers.clients import Client
        from verifiers.types import ClientConfig
    except Exception:
        return client
    if isinstance(client, (Client, ClientConfig)):
        return client
    base_url = str(getattr(client, "base_url", "") or "")
    api_key_var = "OPENAI_API_KEY" if "api.openai.com" in base_url else "OPENROUTER_API_KEY"
    return ClientConfig(
        client_type="openai_chat_completions",
        api_base_url=base_url or "https://openrouter.ai/api/v1",
        api_key_var=api_key_var,
    )


def fail(code, message):
    print(message, file=sys.stderr)
    sys.exit(code)


def main():
    config = json.loads(sys.argv[1])
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        from openai import AsyncOpenAI
    except ImportError:
        fail(3, "openai is required: pip install openai")
    try:
        import verifiers as vf
    except ImportError:
        fail(
            3,
            'verifiers is not installed — `pip install "verifiers<1.0.0"` to score environments '
            "(this runs the legacy v0 Environment API, which v1 froze), and install the world "
            "first (`gateway bench install <slug>`).",
        )
    if not hasattr(vf, "load_environment"):
        fail(
            4,
            "the installed verifiers has no load_environment — it looks like verifiers v1, whose "
            "Taskset API this v0 runner does not drive. Pin `verifiers<1.0.0` for v0 environments, "
            "or run v1 Taskset packages through the platform runner's verifiers-v1 engine.",
        )
    env = vf.load_environment(config["envId"])
    if not hasattr(env, "evaluate_sync"):
        if callable(getattr(env, "load", None)):
            fail(
                4,
                "env looks like a verifiers v1 Taskset (has load(), no evaluate_sync). This runner "
                "drives the legacy v0 Environment API only — run v1 Taskset packages through the "
                "platform runner's verifiers-v1 engine, or pin `verifiers<1.0.0` and expose a v0 "
                "load_environment().",
            )
        fail(4, "env is not a verifiers Environment (no evaluate_sync method).")

    results_path = None
    if config.get("resumePath"):
        results_path = Path(config["resumePath"])
    elif config.get("saveResults"):
        results_path = find_latest_incomplete(
            config["outputDir"], config["envId"], config["model"], config["numExamples"], config["rolloutsPerExample"]
        ) or _results_root(config["outputDir"], config["envId"], config["model"]) / uuid.uuid4().hex[:8]

    client = AsyncOpenAI(base_url=config["baseUrl"], api_key=os.environ.get("OPENROUTER_API_KEY"))
    outputs = env.evaluate_sync(
        client=_adapt_client(client),
        model=config["model"],
        num_examples=config["numExamples"],
        rollouts_per_example=config["rolloutsPerExample"],
    )
    metrics = metrics_from_generate_outputs(outputs)
    if results_path is not None:
        write_results(results_path, _rollouts(outputs), config, metrics)
    json.dump(
        {
            "samples": samples_from_generate_outputs(outputs),
            "metrics": metrics,
            "resultsPath": str(results_path) if results_path else None,
        },
        out,
    )
    out.flush()


main()
