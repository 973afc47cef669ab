"""``local-rag serve``: the library over HTTP, on 127.0.0.1 only, for programs on this machine.

Every request carries the token kept in the data folder (``api.token``, mode 0600) as
``Authorization: Bearer TOKEN``; the OpenAI client sends its ``api_key`` that way. Bodies are JSON (at most
``MAX_BODY_BYTES``); every error is a JSON object ``{"error": "..."}`` with a 4xx or 5xx status.

- ``POST /v1/search``: ``{"query", "k"?, "mode"?, "doc_types"?, "path"?, "collection"?}`` → what ``search
  --json`` prints.
- ``POST /v1/ask``: ``{"question", "grounded"?, "strict"?, "doc_types"?, "collection"?, "max_tokens"?,
  "chat_id"?, "save"?, "stream"?}`` → what ``ask --json`` prints; with ``"stream": true``, server-sent events
  (``answers.py``). ``collection`` (a name or an id; default: the chat's with ``chat_id``, else every
  document) limits the search to a collection's documents; an unknown one is a 404.
- ``POST /v1/documents``: ``{"paths": [absolute file or folder paths]}`` → the files queued (202); they are
  indexed in the background. Only paths in the folders the person allowed are read (``folders.py``); any
  other answers the same 403, whether it exists or not. ``GET /v1/documents`` (status and progress of each),
  ``GET`` and ``DELETE`` ``/v1/documents/{id}``.
- ``POST /v1/chat/completions`` (streaming too) and ``GET /v1/models``: the OpenAI chat API, answered from the
  library, the sources listed under the answer (``openai_chat.py``).
- ``GET /v1/status``: the language model's state and whether documents are being indexed.

Modules: ``app`` (the ASGI application and its routes), ``guard`` (loopback host, token, body size),
``body`` (reading and checking JSON: size, depth, text, fields), ``folders`` (where documents may be read),
``token``, ``answers`` (the language model's one thread), ``indexing``
(the background ingest), ``documents``, ``openai_chat``, ``sse``, ``server`` (uvicorn on 127.0.0.1).
"""

MAX_BODY_BYTES = 1_000_000
