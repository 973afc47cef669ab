-- Collections: named sets of documents that a chat, a search or an evaluation can be scoped to. A document can
-- be in several; a chat keeps the collection it is scoped to (none: every document). Deleting a collection
-- leaves its chats scoped to every document, with a note saying why (``chats.scope_note``). A re-indexed version
-- of a file (``documents.replaces_id``) joins the collections of the version it replaces.

-- migrate:up
CREATE TABLE collections (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL CHECK (btrim(name) <> ''),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX collections_name ON collections (lower(name));

CREATE TABLE collection_documents (
    collection_id bigint NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    document_id   bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    added_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, document_id)
);
CREATE INDEX collection_documents_document ON collection_documents (document_id);

ALTER TABLE chats ADD COLUMN collection_id bigint REFERENCES collections (id) ON DELETE SET NULL;
ALTER TABLE chats ADD COLUMN scope_note text NOT NULL DEFAULT '';

CREATE FUNCTION collections_follow_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO collection_documents (collection_id, document_id)
    SELECT collection_id, NEW.id FROM collection_documents WHERE document_id = NEW.replaces_id
    ON CONFLICT DO NOTHING;
    RETURN NEW;
END
$$;
CREATE TRIGGER documents_join_collections AFTER INSERT ON documents
    FOR EACH ROW WHEN (NEW.replaces_id IS NOT NULL) EXECUTE FUNCTION collections_follow_new_version();

-- migrate:down
DROP TRIGGER documents_join_collections ON documents;
DROP FUNCTION collections_follow_new_version();
ALTER TABLE chats DROP COLUMN scope_note;
ALTER TABLE chats DROP COLUMN collection_id;
DROP TABLE collection_documents;
DROP TABLE collections;
