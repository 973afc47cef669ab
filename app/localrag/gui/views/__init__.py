"""One module per screen: documents, chat, developer pane, banners, settings."""
