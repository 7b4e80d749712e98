-- The cluster-wide maintenance switches (http-api.md §3.13, §4.14): one row per switch. Instances
-- read them at startup and hear of every change on the `regina_maintenance` channel
-- (regina.maintenance_set).

create table regina.maintenance (
    kind       text primary key check (kind in ('push', 'pop')),
    enabled    boolean not null default false,
    changed_at timestamptz not null default clock_timestamp()
);

insert into regina.maintenance (kind) values ('push'), ('pop');
