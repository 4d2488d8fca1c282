-- The catalog gets its own database and role on the same server as Airflow's metadata database.
-- In production it may live on any PostgreSQL server the workers, triggerers and API server can reach.
CREATE ROLE leastaction LOGIN PASSWORD 'leastaction';
CREATE DATABASE leastaction OWNER leastaction;
