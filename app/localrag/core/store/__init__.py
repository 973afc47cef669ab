"""PostgreSQL: the embedded server's lifecycle, connections, migrations and the SQL per table family."""
