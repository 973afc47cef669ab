"""Pure text functions below retrieval and answers: sentences and spans, rows of figures, document identity.

Nothing here touches the database, a model or a thread."""
