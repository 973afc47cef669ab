-- What an answer is made of: which part leads ("sources" or "model"), the evidence quoted from the sources
-- (sentences with their source number, page and offsets) and the model's sentences with their support marks,
-- so that a kept chat shows an answer as it was checked.

-- migrate:up
ALTER TABLE messages ADD COLUMN parts jsonb;

-- migrate:down
ALTER TABLE messages DROP COLUMN parts;
