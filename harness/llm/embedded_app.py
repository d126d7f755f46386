"""The embedded endpoint's own process: llama-cpp-python's OpenAI-compatible server for one
GGUF file, plus two routes of llama.cpp's own `llama-server` that llama-cpp-python lacks, so
that one reader in the client covers both servers:

- `GET /props`: `default_generation_settings.n_ctx`, the context window (llama-cpp-python's
  `/v1/models` does not report one);
- `POST /apply-template` `{"messages"}` -> `{"prompt"}`: the prompt the model's chat template
  makes of them, from which the client learns the template's own tokens around a message.

The model's own chat template (its GGUF's `tokenizer.chat_template`) renders every prompt,
as `llama-server --jinja` does, rather than a built-in format llama-cpp-python may guess.

Run by `lifebench serve` (`lifebench.llm.embedded`) as `python -m lifebench.llm.embedded_app`,
never imported by the harness: it needs the `local` extra (llama-cpp-python[server]). It
listens where it is told (loopback), dies with its parent (the kernel's parent-death signal,
set here as its first act), and logs warnings only.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from lifebench.api.processes import die_with_parent

CACHE_MB = 512  # the prompt cache's capacity, as llama-cpp-python counts it (KV states)
BATCH = 128  # tokens a prefill step takes (as fast as 512 here, a quarter of the memory)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lifebench.llm.embedded_app")
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the name it is served under")
    parser.add_argument("--n-ctx", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--cache", action="store_true", help="llama-cpp-python's prompt cache "
                        "(states of recent prompts in RAM)")
    parser.add_argument("--cache-mb", type=int, default=CACHE_MB)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--no-flash-attn", action="store_true")
    parser.add_argument("--parent", type=int, default=0, help="the pid to die with")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _arguments(argv)
    die_with_parent(signal.SIGKILL, args.parent)
    import uvicorn
    from fastapi import Body
    from fastapi.responses import JSONResponse
    from llama_cpp.server import app as server_app
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    threads = args.threads or os.cpu_count() or 1
    # logits of the last token only: the server's default keeps every position's (n_ctx x
    # the vocabulary, 1.6 GB at 8k for this model), and its prompt cache copies them with
    # every state it keeps, uncounted by its capacity
    model = ModelSettings(model=args.model, model_alias=args.alias, n_ctx=args.n_ctx,
                          n_batch=args.batch, n_ubatch=args.batch, n_threads=threads,
                          n_threads_batch=threads, logits_all=False, flash_attn=not args.no_flash_attn,
                          cache=args.cache, cache_size=args.cache_mb << 20, verbose=False)
    app = create_app(server_settings=ServerSettings(host=args.host, port=args.port),
                     model_settings=[model])
    template = _own_template(server_app._llama_proxy())  # type: ignore[misc]
    generation = {"n_ctx": args.n_ctx, "model": args.alias}

    @app.get("/props")
    def props() -> dict:  # llama-server's shape, the fields a client reads
        return {"default_generation_settings": generation, "total_slots": 1,
                "model_alias": args.alias, "model_path": os.path.basename(args.model)}

    @app.post("/apply-template")
    def apply_template(body: dict = Body(...)) -> Any:
        messages = body.get("messages")
        if template is None:
            return JSONResponse({"error": {"code": 501, "message": "the model has no chat template"}}, 501)
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return JSONResponse({"error": {"code": 400, "message": "messages: a list of objects"}}, 400)
        try:
            return {"prompt": template(messages=messages).prompt}
        except Exception as exc:  # the template refused them (its raise_exception)
            return JSONResponse({"error": {"code": 400, "message": str(exc)[:500]}}, 400)

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


def _own_template(llama: Any) -> Any:
    """The model's chat template as llama-cpp-python renders it for a completion, made the
    one completions use; None for a model without one (llama-cpp-python's fallback then)."""
    from llama_cpp import llama_chat_format

    text = (llama.metadata or {}).get("tokenizer.chat_template")
    if not text:
        return None
    llama.chat_format = "chat_template.default"  # not a format guessed from it
    model = llama._model

    def token(index: int) -> str:
        return model.token_get_text(index) if index != -1 else ""

    return llama_chat_format.Jinja2ChatFormatter(
        template=text, eos_token=token(llama.token_eos()), bos_token=token(llama.token_bos()),
        add_generation_prompt=True)


if __name__ == "__main__":
    sys.exit(main())
