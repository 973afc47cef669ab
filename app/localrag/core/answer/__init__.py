"""Building an answer: retrieval → evidence → prompt → a checked, cited answer, and the chat history it
joins."""
