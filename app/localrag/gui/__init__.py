"""The Qt window over the core. Widgets live on the main thread; work runs in workers and reports by
signals."""
