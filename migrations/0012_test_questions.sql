-- Test questions: a question kept with the document and page that answer it, run again after a change of
-- settings, models or documents to see whether retrieval still finds the page (core/checks/). The document
-- is named by its file name, as in the JSONL datasets of ``local-rag eval``, so that a question outlives a
-- re-index and travels between libraries. Every run keeps its totals and what it ran with; each question's
-- outcome in a run is kept too.

-- migrate:up
CREATE TABLE test_questions (
    id         bigserial PRIMARY KEY,
    question   text NOT NULL,
    file       text NOT NULL,
    pages      integer[] NOT NULL CHECK (cardinality(pages) > 0),
    answer     text NOT NULL DEFAULT '',
    evidence   text NOT NULL DEFAULT '',
    kind       text NOT NULL DEFAULT '',
    label      text NOT NULL DEFAULT '',
    extra      jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX test_questions_question_file ON test_questions (question, file);

CREATE TABLE check_runs (
    id              bigserial PRIMARY KEY,
    started_at      timestamptz NOT NULL DEFAULT now(),
    seconds         double precision NOT NULL,
    questions       integer NOT NULL,
    hit1            integer NOT NULL,
    hit5            integer NOT NULL,
    hit10           integer NOT NULL,
    quoted          integer NOT NULL,
    settings        jsonb NOT NULL,
    embedding_model text NOT NULL DEFAULT '',
    llm_model       text NOT NULL DEFAULT '',
    documents       integer NOT NULL DEFAULT 0,
    chunks          bigint NOT NULL DEFAULT 0
);

CREATE TABLE check_results (
    run_id         bigint NOT NULL REFERENCES check_runs (id) ON DELETE CASCADE,
    question_id    bigint NOT NULL REFERENCES test_questions (id) ON DELETE CASCADE,
    rank           integer,
    quoted_on_page boolean NOT NULL,
    quoted         text NOT NULL DEFAULT '',
    found          jsonb NOT NULL DEFAULT '[]'::jsonb,
    seconds        double precision NOT NULL DEFAULT 0,
    error          text NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, question_id)
);
CREATE INDEX check_results_question ON check_results (question_id);

-- migrate:down
DROP TABLE check_results;
DROP TABLE check_runs;
DROP TABLE test_questions;
