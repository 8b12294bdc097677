-- gnn: graph neural networks inside PostgreSQL
\echo Use "CREATE EXTENSION gnn" to load this file. \quit

-- Fails with a clear error and a hint unless gnn is in shared_preload_libraries.
CREATE FUNCTION gnn._check_preload() RETURNS boolean
    AS 'MODULE_PATHNAME', 'gnn_check_preload' LANGUAGE C STRICT;
SELECT gnn._check_preload();

CREATE TYPE gnn.graph_info AS (
    name        text,
    owner       regrole,
    nodes       bigint,
    edges       bigint,
    feature_dim int,
    features    text,
    classes     int,
    train       bigint,
    val         bigint,
    test        bigint,
    undirected  boolean,
    bytes       bigint,
    loaded_at   timestamptz
);

-- Reads the edge table (and the node table, sparse features) as the calling
-- role and builds the graph in shared memory.  Not SECURITY DEFINER: the
-- caller's privileges, row-level security included, decide what is read.
-- features: a real[] column's name, an ordinary column's, an array of
-- column names, or '*' (every column but id, label, split and part): the
-- columns are encoded as gnn.load_schema_graph encodes them.
CREATE FUNCTION gnn.load_graph(
    name            text,
    edges           regclass,
    src             text     DEFAULT 'src',
    dst             text     DEFAULT 'dst',
    nodes           regclass DEFAULT NULL,
    id              text     DEFAULT 'id',
    features        anycompatible DEFAULT NULL::text,
    label           text     DEFAULT NULL,
    split           text     DEFAULT NULL,
    weight          text     DEFAULT NULL,
    undirected      boolean  DEFAULT false,
    replace         boolean  DEFAULT false,
    sparse_features regclass DEFAULT NULL,
    sparse_id       text     DEFAULT 'id',
    sparse_index    text     DEFAULT 'feature',
    sparse_value    text     DEFAULT 'value',
    skip_dangling   boolean  DEFAULT false,
    track           boolean  DEFAULT false,
    persist         boolean  DEFAULT NULL,
    feature_store   text     DEFAULT NULL,
    part_column     text     DEFAULT NULL,
    part            int      DEFAULT NULL,
    halo_hops       int      DEFAULT 1,
    feature_slice   int[]    DEFAULT NULL)
RETURNS gnn.graph_info
AS 'MODULE_PATHNAME', 'gnn_load_graph' LANGUAGE C VOLATILE;

-- Graph names are per role: name is the calling role's graph.  A superuser
-- (or a member of the owner) frees another role's graph with owner =>, also
-- one left by a dropped role (owner => its OID, as gnn.graphs shows it).
CREATE FUNCTION gnn.drop_graph(name text, if_exists boolean DEFAULT false, owner regrole DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'gnn_drop_graph' LANGUAGE C VOLATILE;

CREATE FUNCTION gnn.graph_list() RETURNS SETOF gnn.graph_info
AS 'MODULE_PATHNAME', 'gnn_graph_list' LANGUAGE C VOLATILE;

-- The graphs of this database that the current role owns (all of them for a superuser).
-- Change capture (see gnn.track below): whether a graph follows its tables,
-- how many captured row changes wait for gnn.refresh_graph(), when it
-- last refreshed, and the bytes of the delta refreshes keep over the loaded
-- graph (0: none; included in bytes; gnn.merge_threshold bounds it).
CREATE FUNCTION gnn._graph_tracking(graph text, owner regrole,
    OUT tracked boolean, OUT pending_changes bigint, OUT refreshed_at timestamptz,
    OUT delta_bytes bigint)
AS 'MODULE_PATHNAME', 'gnn_graph_tracking' LANGUAGE C STABLE;

-- The graph store (persist => true, gnn.persist_graphs): whether the graph
-- has files in $PGDATA/gnn/, and its state: 'memory' (mapped), 'disk' (back
-- after a restart, mapped on first use) or 'invalid' (its files failed their
-- checks: store_error says why; gnn.drop_graph removes them); where its
-- features are: 'memory' (in the region) or 'disk' (dense features in the
-- store's features file, read through the graph's shared feature cache,
-- gnn.feature_caches; NULL: no features).
CREATE FUNCTION gnn._graph_store(graph text, owner regrole,
    OUT persisted boolean, OUT state text, OUT store_error text, OUT feature_store text)
AS 'MODULE_PATHNAME', 'gnn_graph_store' LANGUAGE C STABLE;

CREATE VIEW gnn.graphs AS
SELECT l.*, t.tracked, t.pending_changes, t.refreshed_at, t.delta_bytes,
       s.persisted, s.state, s.store_error, s.feature_store
FROM gnn.graph_list() l, LATERAL gnn._graph_tracking(l.name, l.owner) t,
     LATERAL gnn._graph_store(l.name, l.owner) s;

-- Graphs whose features are on disk read them through one row cache per
-- graph version, shared by every session and training job (SIEVE eviction):
-- made on first use with gnn.feature_cache_size of rows (as much as
-- gnn.max_graph_memory has room for; bytes, with its index, count in
-- gnn.memory_used()), gone when the graph is dropped or replaced.  Hits and
-- misses are every process's since it was made.
CREATE FUNCTION gnn._feature_cache(graph text, owner regrole,
    OUT capacity_rows bigint, OUT cached_rows bigint, OUT bytes bigint,
    OUT hits bigint, OUT misses bigint, OUT evictions bigint, OUT hit_rate float8)
AS 'MODULE_PATHNAME', 'gnn_feature_cache' LANGUAGE C VOLATILE;

CREATE VIEW gnn.feature_caches WITH (security_invoker = true) AS
SELECT l.name AS graph, l.owner, c.*
FROM gnn.graph_list() l, LATERAL gnn._feature_cache(l.name, l.owner) c
WHERE c.capacity_rows IS NOT NULL;
GRANT SELECT ON gnn.feature_caches TO PUBLIC;

CREATE FUNCTION gnn.memory_used() RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_memory_used' LANGUAGE C VOLATILE;

-- direction: 'out' (edges leaving node), 'in' (edges arriving), 'both'
-- node: an integer key (or a key as text, the overloads below) of node_type
-- (default: a schema graph's target table, a homogeneous graph's only type)
CREATE FUNCTION gnn.degree(graph text, node bigint, direction text DEFAULT 'out', node_type text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_degree' LANGUAGE C STABLE;

CREATE FUNCTION gnn.degree(graph text, node text, direction text DEFAULT 'out', node_type text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_degree' LANGUAGE C STABLE;

-- neighbor: the neighbour's integer key (a text key's rank), key: its key as
-- text, neighbor_type: its table (schema graphs)
CREATE FUNCTION gnn.neighbors(graph text, node bigint, direction text DEFAULT 'out', node_type text DEFAULT NULL)
RETURNS TABLE (neighbor bigint, weight real, key text, neighbor_type text)
AS 'MODULE_PATHNAME', 'gnn_neighbors' LANGUAGE C STABLE;

CREATE FUNCTION gnn.neighbors(graph text, node text, direction text DEFAULT 'out', node_type text DEFAULT NULL)
RETURNS TABLE (neighbor bigint, weight real, key text, neighbor_type text)
AS 'MODULE_PATHNAME', 'gnn_neighbors' LANGUAGE C STABLE;

-- ---- schema graphs
-- A relational schema as one typed graph: each table a node type keyed by
-- its primary key (or options.keys), each single-column foreign key between
-- listed tables an edge type plus its reverse, ordinary columns encoded as
-- features (numbers standardised, booleans 0/1, low-cardinality text and
-- enums one-hot, times as numbers, real[]/float8[] as they are, NULLs with a
-- missing indicator).  Read as the calling role.
CREATE FUNCTION gnn.load_schema_graph(
    name     text,
    tables   regclass[],
    target   regclass DEFAULT NULL,
    label    text     DEFAULT NULL,
    split    text     DEFAULT NULL,
    options  jsonb    DEFAULT '{}',
    replace  boolean  DEFAULT false,
    track    boolean  DEFAULT false)
RETURNS gnn.graph_info
AS 'MODULE_PATHNAME', 'gnn_load_schema_graph' LANGUAGE C VOLATILE;

CREATE FUNCTION gnn._graph_meta(graph text) RETURNS jsonb
AS 'MODULE_PATHNAME', 'gnn_graph_meta' LANGUAGE C STABLE;

CREATE FUNCTION gnn._graph_type_counts(graph text, OUT kind text, OUT id int, OUT type text,
                                       OUT count bigint, OUT src_type text, OUT dst_type text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gnn_graph_type_counts' LANGUAGE C STABLE;

-- A row per node type and per edge type (relation) of a graph.
-- One part of a partitioned graph, for distributed training: part_column
-- names an integer column of the node table (gnn.partition's output, joined
-- in or written there), part this server's part.  The graph holds the rows
-- of that part (features, labels, splits), every edge with an endpoint among
-- them, and the halo: the other endpoints of those edges, as nodes without
-- features, label or split (their owners have those).  halo_hops => L
-- (options.halo_hops of gnn.load_schema_graph) keeps every edge of the nodes
-- within L - 1 hops of the part too, so that a minibatch job over several
-- servers samples L hops from its own seeds as on the whole graph.
-- gnn.graph_part and gnn.halo describe it.
CREATE FUNCTION gnn._graph_part_counts(graph text, OUT part int, OUT nodes bigint, OUT own bigint,
                                       OUT halo bigint, OUT halo_unknown bigint, OUT edges bigint,
                                       OUT own_edges bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gnn_graph_part_counts' LANGUAGE C STABLE;

-- One row for one part of a partitioned graph, none for a whole graph:
-- halo_unknown counts halo nodes whose row is not in this server's node
-- table (their owner is found when training asks the other servers),
-- own_edges the arcs between two of the part's own nodes.
CREATE FUNCTION gnn.graph_part(graph text)
RETURNS TABLE (part int, part_column text, nodes bigint, own bigint, halo bigint,
               halo_unknown bigint, edges bigint, own_edges bigint, halo_hops int)
LANGUAGE sql STABLE AS $$
  SELECT c.part, m -> 'partition' ->> 'column', c.nodes, c.own, c.halo,
         c.halo_unknown, c.edges, c.own_edges, coalesce((m -> 'partition' ->> 'halo_hops')::int, 1)
  FROM gnn._graph_part_counts(graph) c, (SELECT gnn._graph_meta(graph) AS m) meta
$$;

-- The features a graph holds for a node (dense or sparse, in memory or on
-- disk), as training reads them; NULL for a graph without features.
CREATE FUNCTION gnn.features(graph text, node bigint, node_type text DEFAULT NULL)
RETURNS real[]
AS 'MODULE_PATHNAME', 'gnn_features' LANGUAGE C STABLE;
CREATE FUNCTION gnn.features(graph text, node text, node_type text DEFAULT NULL)
RETURNS real[]
AS 'MODULE_PATHNAME', 'gnn_features' LANGUAGE C STABLE;

-- The halo of one part: each node, its owner part (NULL: not in this
-- server's node table) and how many of the part's own nodes it touches.
CREATE FUNCTION gnn.halo(graph text)
RETURNS TABLE (node bigint, owner int, own_neighbors int, key text)
AS 'MODULE_PATHNAME', 'gnn_halo' LANGUAGE C STABLE;

CREATE FUNCTION gnn.graph_types(graph text)
RETURNS TABLE (kind text, type text, source text, count bigint, feature_dim int,
               src_type text, dst_type text)
LANGUAGE sql STABLE AS $$
    SELECT c.kind, c.type,
           CASE c.kind WHEN 'node' THEN m.j->'types'->c.id->>'table'
                ELSE (SELECT e->>'source' FROM jsonb_array_elements(m.j->'edges') e
                       WHERE (e->>'id')::int = c.id) END,
           c.count,
           CASE c.kind WHEN 'node' THEN (m.j->'types'->c.id->>'feature_width')::int END,
           c.src_type, c.dst_type
      FROM gnn._graph_type_counts(graph) c, (SELECT gnn._graph_meta(graph) AS j) m
     ORDER BY c.kind DESC, c.id
$$;

-- Per node type, each source column: how it was encoded and its slice of
-- the feature vector (feature_offset .. feature_offset + width - 1).
CREATE FUNCTION gnn.graph_columns(graph text)
RETURNS TABLE (type text, column_name text, column_type text, encoding text,
               feature_offset int, width int, detail jsonb)
LANGUAGE sql STABLE AS $$
    SELECT t.t->>'name', c.c->>'column', c.c->>'type', c.c->>'encoding',
           (t.t->>'feature_offset')::int + (c.c->>'offset')::int, (c.c->>'width')::int,
           c.c->'detail'
      FROM jsonb_array_elements(gnn._graph_meta(graph)->'types') WITH ORDINALITY AS t(t, i),
           jsonb_array_elements(t.t->'columns') WITH ORDINALITY AS c(c, j)
     ORDER BY t.i, c.j
$$;

GRANT USAGE ON SCHEMA gnn TO PUBLIC;
GRANT SELECT ON gnn.graphs TO PUBLIC;

-- ------------------------------------------------------------------ training jobs
-- Jobs run in dynamic background workers as the role that started them.
-- These tables are the extension's bookkeeping: every role may read its own
-- rows (row-level security; a superuser sees all), and nobody writes them
-- but the extension's C code, which records the calling role as the owner
-- of each row (gnn.train, its worker, gnn.drop_model).  No role can plant,
-- alter or delete a row, take another's ids or names, or learn from a key
-- conflict which exist: ids come from sequences only the extension uses,
-- and model names and versions are counted per owner.
CREATE SEQUENCE gnn.job_id_seq;
CREATE SEQUENCE gnn.model_id_seq;

CREATE TABLE gnn.job_history (
    id          bigint PRIMARY KEY,
    graph       text NOT NULL,
    model_name  text NOT NULL,
    model       text NOT NULL,
    task        text NOT NULL,
    owner       regrole NOT NULL,
    state       text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    epoch       int,
    epochs      int,
    loss        real,
    train_acc   real,
    val_acc     real,
    device      text,
    params      jsonb,
    instance    bigint,         -- which server lifetime ran it (see gnn.jobs)
    started     timestamptz,
    finished    timestamptz,
    error       text,
    -- seconds the worker took after the job succeeded to compute the results serving asks for
    -- first (the default embedding, class probabilities); NULL until then, or when it computed none
    results_seconds float8
);
-- the jobs recorded as queued or running: every gnn.train marks those of an
-- earlier server lifetime failed (jobs.c, NextJobId), and reads only these,
-- however long the history grows (pg_cron training every few minutes)
CREATE INDEX job_history_live ON gnn.job_history (instance) WHERE state IN ('queued', 'running');

CREATE TABLE gnn.training_log (
    job         bigint NOT NULL,
    epoch       int NOT NULL,
    loss        real,
    train_acc   real,
    val_acc     real,
    val_loss    real,
    test_acc    real,
    seconds     float8,
    owner       regrole NOT NULL,
    -- where the epoch's time went (NULL: not measured by this kind of
    -- training): sampling and gathering batches (ahead of the computation
    -- when options.prefetch > 0), computing, waiting for the next batch,
    -- evaluating
    sample_seconds  float8,
    gather_seconds  float8,
    compute_seconds float8,
    wait_seconds    float8,
    eval_seconds    float8,
    -- minibatch training on a GPU: the share of feature rows its cache
    -- served (NULL: no cache, or the batches were built on the CPU), and the
    -- bytes batches moved from host to device (NULL on the CPU)
    cache_hit_rate  float8,
    h2d_bytes       bigint,
    -- a graph with its features on disk (feature_store => 'disk'): the share
    -- of the job's feature rows the graph's shared cache (gnn.feature_caches)
    -- served, the bytes the job read from the features file, and read
    -- amplification (bytes read over the bytes of the rows missed: reads are
    -- whole 512-byte units)
    store_hit_rate  float8,
    store_bytes_read bigint,
    store_read_amplification float8,
    PRIMARY KEY (job, epoch)
);

-- Model names are per owner: (owner, name, version) identifies a model, and
-- a name in gnn.predict() & co. means the calling role's model of that name.
CREATE TABLE gnn.models (
    name        text NOT NULL,
    version     int NOT NULL,
    graph       text NOT NULL,
    model       text NOT NULL,      -- architecture: gcn, graphsage, gat
    task        text NOT NULL,
    params      jsonb NOT NULL,     -- architecture and hyper-parameters
    metrics     jsonb NOT NULL,     -- best val accuracy, test accuracy, epochs run, seconds
    created_at  timestamptz NOT NULL DEFAULT now(),
    job         bigint,
    owner       regrole NOT NULL,
    weights     bytea NOT NULL,     -- the serialised model (versioned, checksummed)
    classes     text[],             -- class names by class number (text labels), kept with the model
    id          bigint NOT NULL UNIQUE DEFAULT nextval('gnn.model_id_seq'),  -- never reused
    deployed    boolean NOT NULL DEFAULT false,  -- the version calls use by default (gnn.deploy)
    PRIMARY KEY (owner, name, version)
);

-- Every deployment of a model name (gnn.deploy, gnn.train's deploy =>): the
-- version, how it was chosen, when; a rollback marks the deployment it undoes
-- (rolled_back_at) and the one before it is deployed again.
CREATE SEQUENCE gnn.deployment_id_seq;
CREATE TABLE gnn.deployments (
    id             bigint NOT NULL PRIMARY KEY DEFAULT nextval('gnn.deployment_id_seq'),
    owner          regrole NOT NULL,
    name           text NOT NULL,
    version        int NOT NULL,
    strategy       text NOT NULL,   -- specific, most_recent, best_score, if_better, always
    deployed_at    timestamptz NOT NULL DEFAULT now(),
    rolled_back_at timestamptz
);

-- Change capture.  gnn.track() puts statement-level AFTER triggers with
-- transition tables on the tables a graph was loaded from; each statement
-- appends one row per tracked graph here, in the statement's transaction (a
-- rollback leaves nothing behind).  changes packs the statement's removed
-- and added rows (binary, read by gnn.refresh_graph; kind 't' is a TRUNCATE
-- or a table no longer shaped as loaded: a full reload).  The trigger writes
-- here directly, not through SQL, so no role needs (or has) INSERT; the
-- rows' owner is the graph's owner, the only role (with superusers) that
-- can read them.  A refresh or a load of the graph deletes the rows it
-- applied.
CREATE SEQUENCE gnn.change_seq;
CREATE TABLE gnn.change_log (
    seq         bigint NOT NULL,
    graph       text NOT NULL,
    owner       regrole NOT NULL,
    relid       regclass NOT NULL,
    kind        "char" NOT NULL,    -- e: edge rows, n: node rows, t: full reload
    rows        bigint NOT NULL,    -- row changes in changes
    logged_at   timestamptz NOT NULL,
    changes     bytea
);
ALTER TABLE gnn.change_log ALTER COLUMN changes SET STORAGE EXTERNAL;  -- no compression: capture stays cheap

-- The capture triggers gnn.track made: which graph (and owner) each one
-- feeds, and what its table's rows hold (kind and loaded columns,
-- NUL-separated).  gnn._capture looks the firing trigger up here and acts
-- only for what it finds, so a trigger another role puts on
-- gnn._capture() logs nothing, and the triggers' definitions (their names
-- carry a number, they have no arguments) name no graph and no owner.
-- Only the extension writes it; each role reads its own rows.
CREATE SEQUENCE gnn.capture_seq;
CREATE TABLE gnn.capture (
    trigger     oid PRIMARY KEY,    -- pg_trigger.oid
    relid       oid NOT NULL,
    graph       text NOT NULL,
    owner       regrole NOT NULL,
    args        bytea NOT NULL,
    relname     text NOT NULL       -- the table as named when the trigger was made
);
CREATE INDEX ON gnn.capture (owner, graph);

-- What each refresh changed (gnn.refresh_graph writes it): the nodes whose
-- data or arcs changed between two versions of a graph in one server
-- lifetime (instance).  gnn.embed(..., incremental => true) follows this
-- chain from the version it last wrote (gnn.embed_state) to the current
-- one and recomputes only the rows within the model's reach of these.
CREATE TABLE gnn.graph_history (
    owner           regrole NOT NULL,
    graph           text NOT NULL,
    instance        bigint NOT NULL,
    base_generation bigint NOT NULL,
    generation      bigint NOT NULL,
    touched         bigint[] NOT NULL,
    -- of those, the nodes whose own data changed (features) or that came;
    -- the rest changed only arcs (NULL: not told apart, all count as data)
    data_touched    bigint[],
    at              timestamptz NOT NULL DEFAULT now()
);
-- sorted node ids compress poorly and every refresh writes them: stored as they are
ALTER TABLE gnn.graph_history ALTER touched SET STORAGE EXTERNAL, ALTER data_touched SET STORAGE EXTERNAL;
-- The graph version each embedding table was last written from.
CREATE TABLE gnn.embed_state (
    owner       regrole NOT NULL,
    relid       oid NOT NULL,
    model_id    bigint NOT NULL,
    layer       int NOT NULL,
    graph       text NOT NULL,
    instance    bigint NOT NULL,
    generation  bigint NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, relid)
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['job_history', 'training_log', 'models', 'change_log', 'graph_history', 'embed_state',
                             'capture', 'deployments'] LOOP
        EXECUTE format('ALTER TABLE gnn.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY owner_only ON gnn.%I FOR SELECT USING (pg_has_role(owner, ''MEMBER''))', t);
        EXECUTE format('REVOKE ALL ON gnn.%I FROM PUBLIC', t);
        EXECUTE format('GRANT SELECT ON gnn.%I TO PUBLIC', t);
    END LOOP;
END $$;
REVOKE ALL ON SEQUENCE gnn.job_id_seq, gnn.model_id_seq, gnn.change_seq, gnn.capture_seq,
    gnn.deployment_id_seq FROM PUBLIC;

-- models, jobs and logs are data: pg_dump keeps them
SELECT pg_catalog.pg_extension_config_dump('gnn.models', '');
SELECT pg_catalog.pg_extension_config_dump('gnn.deployments', '');
SELECT pg_catalog.pg_extension_config_dump('gnn.job_history', '');
SELECT pg_catalog.pg_extension_config_dump('gnn.training_log', '');
CREATE FUNCTION gnn._capture() RETURNS trigger
AS 'MODULE_PATHNAME', 'gnn_capture' LANGUAGE C;

-- Capture changes of every table graph was loaded from (enabled => false:
-- stop, and forget the pending changes).  Enabling reloads the graph so that
-- it and the log start from the same snapshot.  Returns the number of tables
-- tracked.  Needs the TRIGGER privilege on them (removing: ownership).
CREATE FUNCTION gnn.track(graph text, enabled boolean DEFAULT true) RETURNS integer
AS 'MODULE_PATHNAME', 'gnn_track' LANGUAGE C VOLATILE;

-- Apply every change committed before the call to the in-memory graph.
-- Takes effect when the calling transaction commits.  merge => true merges
-- the graph's delta (and the changes) into a new graph however small it is.
CREATE FUNCTION gnn.refresh_graph(graph text, merge boolean DEFAULT false)
RETURNS TABLE (inserted_edges bigint, deleted_edges bigint, inserted_nodes bigint,
               deleted_nodes bigint, updated_nodes bigint, seconds float8)
AS 'MODULE_PATHNAME', 'gnn_refresh_graph' LANGUAGE C VOLATILE;

-- A digest of everything a graph holds (nodes, arcs and weights, reverse
-- arcs, dense and sparse features, labels, classes, splits, node types and
-- relations, keys, times, targets): equal digests, equal graphs.  features
-- => false leaves the feature values out: a tracked schema graph keeps its
-- columns' encoding (means, categories) across refreshes, where a fresh
-- load fits it anew.
CREATE FUNCTION gnn.graph_digest(graph text, features boolean DEFAULT true) RETURNS text
AS 'MODULE_PATHNAME', 'gnn_graph_digest' LANGUAGE C STABLE;

SELECT pg_catalog.pg_extension_config_dump('gnn.job_id_seq', '');
-- job ids never repeat in a database, also when the extension is dropped and
-- created again (gnn keeps the highest id given out in the data directory)
CREATE FUNCTION gnn._job_id_floor() RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_job_id_floor' LANGUAGE C VOLATILE;
SELECT pg_catalog.setval('gnn.job_id_seq', gnn._job_id_floor() + 1, false);
SELECT pg_catalog.pg_extension_config_dump('gnn.model_id_seq', '');

CREATE FUNCTION gnn._instance() RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_instance' LANGUAGE C VOLATILE;

-- live jobs of this server lifetime, from shared memory
CREATE FUNCTION gnn._live_jobs(
    OUT id bigint, OUT graph text, OUT model_name text, OUT model text, OUT owner regrole,
    OUT state text, OUT epoch int, OUT epochs int, OUT loss real, OUT train_acc real,
    OUT val_acc real, OUT device text, OUT started timestamptz, OUT finished timestamptz,
    OUT error text, OUT pid int)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gnn_live_jobs' LANGUAGE C VOLATILE;

-- The rendezvous store of distributed jobs: the ranks (Gloo) publish their
-- addresses here, on the coordinator, each through its own connection, under
-- the job's random key and generation; the job deletes its rows when it ends.
-- Its coordinator's connection holds the job's advisory lock meanwhile: a
-- role's next coordinator sweeps the rows of jobs whose lock nobody holds.
-- Each role sees and writes only its own rows.
CREATE TABLE gnn.dist_store (
    job     text NOT NULL,
    key     text NOT NULL,
    value   bytea NOT NULL,
    owner   name NOT NULL DEFAULT current_user,
    created timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job, key));
ALTER TABLE gnn.dist_store ENABLE ROW LEVEL SECURITY;
CREATE POLICY dist_store_own ON gnn.dist_store USING (owner = current_user) WITH CHECK (owner = current_user);
GRANT SELECT, INSERT, UPDATE, DELETE ON gnn.dist_store TO PUBLIC;

-- The ranks of a running job over several servers: each rank's last epoch,
-- its loss and validation accuracy (the whole graph's, the same on every
-- rank) and the epoch's seconds on that server.  Empty for other jobs and
-- once the job has ended (its metrics keep each rank's figures).
CREATE FUNCTION gnn.job_ranks(job bigint)
RETURNS TABLE (rank int, epoch int, loss float8, val_acc float8, epoch_seconds float8)
LANGUAGE sql STABLE AS $$
  SELECT substr(s.key, 6)::int, split_part(v, '|', 1)::int, split_part(v, '|', 2)::float8,
         split_part(v, '|', 3)::float8, split_part(v, '|', 4)::float8
  FROM gnn.dist_store s, LATERAL convert_from(s.value, 'UTF8') v
  WHERE s.job LIKE 'job' || $1 || '-%' AND s.key LIKE 'rank/%'
  ORDER BY 1
$$;

-- Every job: live progress from shared memory, history from gnn.job_history.
-- A job recorded as running that no live worker holds ran when its worker
-- died or the server restarted: it shows as failed.
CREATE VIEW gnn.jobs WITH (security_invoker = true) AS
SELECT coalesce(l.id, h.id) AS id,
       coalesce(l.graph, h.graph) AS graph,
       coalesce(l.model_name, h.model_name) AS model_name,
       coalesce(l.model, h.model) AS model,
       coalesce(l.owner, h.owner) AS owner,
       CASE WHEN l.id IS NOT NULL THEN l.state
            WHEN h.state IN ('queued', 'running') THEN 'failed'
            ELSE h.state END AS state,
       coalesce(l.epoch, h.epoch) AS epoch,
       coalesce(l.epochs, h.epochs) AS epochs,
       coalesce(l.loss, h.loss) AS loss,
       coalesce(l.train_acc, h.train_acc) AS train_acc,
       coalesce(l.val_acc, h.val_acc) AS val_acc,
       coalesce(l.device, h.device) AS device,
       coalesce(l.started, h.started) AS started,
       coalesce(l.finished, h.finished) AS finished,
       CASE WHEN l.id IS NULL AND h.state IN ('queued', 'running')
            THEN 'the job''s worker died or the server restarted while the job ran'
            ELSE coalesce(l.error, h.error) END AS error,
       l.pid,
       h.results_seconds,
       -- a running job over several servers: each rank's epoch, loss and validation accuracy
       CASE WHEN l.id IS NOT NULL THEN
         (SELECT jsonb_agg(jsonb_build_object('rank', r.rank, 'epoch', r.epoch, 'loss', r.loss,
                                              'val_acc', r.val_acc) ORDER BY r.rank)
          FROM gnn.job_ranks(l.id) r) END AS ranks
FROM gnn.job_history h
FULL JOIN gnn._live_jobs() l ON l.id = h.id;
GRANT SELECT ON gnn.jobs TO PUBLIC;

-- A picture of a training job's curves, as SVG text: the loss per epoch
-- (left axis) and the training and validation metric (right axis: accuracy;
-- AUC for link prediction; MAE for regression), the selected epoch marked,
-- with axes, labels and a legend.  Every point carries its series, epoch and
-- value (data-series, data-epoch, data-value) so programs can read the
-- numbers back.  It reads gnn.training_log as the calling role: a job the
-- role may not see has no log.  Save it with psql's \g or \o, or convert it
-- with rsvg-convert (make demo does both).
CREATE FUNCTION gnn.training_curve(job bigint) RETURNS text
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    w constant float8 := 720;   h constant float8 := 400;
    ml constant float8 := 70;   mr constant float8 := 70;
    mt constant float8 := 72;   mb constant float8 := 56;
    pw constant float8 := w - ml - mr;
    ph constant float8 := h - mt - mb;
    n int; e0 int; e1 int;
    lmax float8; mmax float8;
    v_task text; v_model text; v_graph text; v_name text; v_best int;
    metric text; reg boolean;
    title text; body text := '';
    s record;
    tick float8; step float8;
BEGIN
    SELECT count(*), min(l.epoch), max(l.epoch), max(l.loss)
      INTO n, e0, e1, lmax
      FROM gnn.training_log l WHERE l.job = training_curve.job;
    IF n = 0 THEN
        RAISE EXCEPTION 'job % has no training log', training_curve.job
            USING ERRCODE = 'no_data_found',
                  DETAIL = 'Either no such job is visible to this role, or it ended before its first epoch.',
                  HINT = 'gnn.jobs shows the jobs this role can see and their state.';
    END IF;
    SELECT m.task, m.model, m.graph, m.name, (m.metrics->>'best_epoch')::int
      INTO v_task, v_model, v_graph, v_name, v_best
      FROM gnn.models m WHERE m.job = training_curve.job
      ORDER BY m.version DESC LIMIT 1;
    IF NOT FOUND THEN
        SELECT j.model, j.graph, j.model_name INTO v_model, v_graph, v_name
          FROM gnn.jobs j WHERE j.id = training_curve.job;
        v_task := 'node_classification';
    END IF;
    reg := v_task = 'regression';
    metric := CASE WHEN reg THEN 'MAE' WHEN v_task = 'link_prediction' THEN 'AUC' ELSE 'accuracy' END;
    -- regression logs minus the MAE (higher is better everywhere)
    SELECT max(greatest(CASE WHEN reg THEN -l.train_acc ELSE l.train_acc END,
                        CASE WHEN reg THEN -l.val_acc ELSE l.val_acc END))
      INTO mmax FROM gnn.training_log l WHERE l.job = training_curve.job;
    -- axes of 5 steps of 1, 2, 2.5 or 5 times a power of ten
    lmax := greatest(coalesce(lmax, 1), 1e-9);
    step := power(10, floor(log(lmax / 5)));
    step := step * CASE WHEN lmax / 5 <= step THEN 1 WHEN lmax / 5 <= 2 * step THEN 2
                        WHEN lmax / 5 <= 2.5 * step THEN 2.5 WHEN lmax / 5 <= 5 * step THEN 5 ELSE 10 END;
    lmax := step * 5;
    IF reg THEN
        mmax := greatest(coalesce(mmax, 1), 1e-9);
        step := power(10, floor(log(mmax / 5)));
        step := step * CASE WHEN mmax / 5 <= step THEN 1 WHEN mmax / 5 <= 2 * step THEN 2
                            WHEN mmax / 5 <= 2.5 * step THEN 2.5 WHEN mmax / 5 <= 5 * step THEN 5 ELSE 10 END;
        mmax := step * 5;
    ELSE
        mmax := 1;
    END IF;
    IF e1 = e0 THEN e1 := e0 + 1; END IF;

    -- grid and axes
    FOR i IN 0..5 LOOP
        body := body || format('<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>',
                               ml, round((mt + ph - i * ph / 5)::numeric, 1), ml + pw, round((mt + ph - i * ph / 5)::numeric, 1))
                     || format('<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>',
                               ml - 6, round((mt + ph - i * ph / 5 + 4)::numeric, 1), to_char(lmax * i / 5, 'FM999990.00'))
                     || format('<text class="tick" x="%s" y="%s">%s</text>',
                               ml + pw + 6, round((mt + ph - i * ph / 5 + 4)::numeric, 1), to_char(mmax * i / 5, 'FM999990.00'));
    END LOOP;
    -- epoch ticks at multiples of 1, 2 or 5 times a power of ten (and the first epoch)
    step := greatest(1, power(10, floor(log(greatest((e1 - e0) / 10.0, 1)))));
    step := step * CASE WHEN (e1 - e0) / 10.0 <= step THEN 1 WHEN (e1 - e0) / 10.0 <= 2 * step THEN 2
                        WHEN (e1 - e0) / 10.0 <= 5 * step THEN 5 ELSE 10 END;
    body := body || format('<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>', ml, mt + ph + 18, e0);
    tick := (floor(e0 / step) + 1) * step;
    WHILE tick <= e1 LOOP
        body := body || format('<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>',
                               round((ml + (tick - e0) / (e1 - e0) * pw)::numeric, 1), mt + ph + 18, tick::int);
        tick := tick + step;
    END LOOP;
    body := body
        || format('<rect class="frame" x="%s" y="%s" width="%s" height="%s"/>', ml, mt, pw, ph)
        || format('<text class="label" x="%s" y="%s" text-anchor="middle">epoch</text>', ml + pw / 2, h - 14)
        || format('<text class="label" transform="translate(18,%s) rotate(-90)" text-anchor="middle">loss</text>', mt + ph / 2)
        || format('<text class="label" transform="translate(%s,%s) rotate(90)" text-anchor="middle">%s</text>',
                  w - 18, mt + ph / 2, metric);

    -- the selected epoch
    IF v_best IS NOT NULL AND v_best BETWEEN e0 AND e1 THEN
        tick := ml + (v_best - e0)::float8 / (e1 - e0) * pw;
        body := body || format('<line class="best" x1="%1$s" y1="%2$s" x2="%1$s" y2="%3$s"/>'
                               '<text class="best" x="%4$s" y="%5$s" text-anchor="%6$s">selected: epoch %7$s</text>',
                               round(tick::numeric, 1), mt, mt + ph,
                               round((tick + CASE WHEN tick > ml + pw / 2 THEN -4 ELSE 4 END)::numeric, 1), mt + ph - 8,
                               CASE WHEN tick > ml + pw / 2 THEN 'end' ELSE 'start' END, v_best);
    END IF;

    -- the series: loss on the left axis, the metric on the right
    FOR s IN
        SELECT x.series, x.cls, x.label, x.scale,
               string_agg(format('%s,%s', x.px, x.py), ' ' ORDER BY x.epoch) AS pts,
               string_agg(format('<circle class="%s" cx="%s" cy="%s" r="2.5" data-series="%s" data-epoch="%s" data-value="%s"/>',
                                 x.cls, x.px, x.py, x.series, x.epoch, x.v), '' ORDER BY x.epoch) AS dots
          FROM (SELECT d.series, d.cls, d.label, d.scale, d.epoch, d.v,
                       round((ml + (d.epoch - e0)::float8 / (e1 - e0) * pw)::numeric, 1) AS px,
                       round((mt + ph - least(greatest(d.v / d.scale, 0), 1) * ph)::numeric, 1) AS py
                  FROM (SELECT 1 AS ord, 'loss' AS series, 'loss' AS cls, 'training loss' AS label, lmax AS scale,
                               l.epoch, l.loss::float8 AS v
                          FROM gnn.training_log l WHERE l.job = training_curve.job
                        UNION ALL
                        SELECT 2, 'train_' || lower(metric), 'train', 'training ' || metric, mmax,
                               l.epoch, (CASE WHEN reg THEN -l.train_acc ELSE l.train_acc END)::float8
                          FROM gnn.training_log l WHERE l.job = training_curve.job
                        UNION ALL
                        SELECT 3, 'val_' || lower(metric), 'val', 'validation ' || metric, mmax,
                               l.epoch, (CASE WHEN reg THEN -l.val_acc ELSE l.val_acc END)::float8
                          FROM gnn.training_log l WHERE l.job = training_curve.job) d
                 WHERE d.v IS NOT NULL AND d.v <> 'NaN'::float8) x
         GROUP BY x.series, x.cls, x.label, x.scale
         ORDER BY min(CASE x.cls WHEN 'loss' THEN 1 WHEN 'train' THEN 2 ELSE 3 END)
    LOOP
        body := body || format('<polyline class="%s" points="%s"/>', s.cls, s.pts) || s.dots;
    END LOOP;

    -- legend: one row between the title and the plot
    body := body
        || format('<g class="legend" transform="translate(%s,%s)">', ml, 44)
        || '<line class="loss" x1="0" y1="0" x2="24" y2="0"/><text x="30" y="4">training loss</text>'
        || format('<line class="train" x1="150" y1="0" x2="174" y2="0"/><text x="180" y="4">training %s</text>', metric)
        || format('<line class="val" x1="320" y1="0" x2="344" y2="0"/><text x="350" y="4">validation %s</text>', metric)
        || '</g>';

    title := format('%s: %s on %s, job %s', coalesce(v_name, '?'), coalesce(v_model, '?'), coalesce(v_graph, '?'),
                    training_curve.job);
    title := replace(replace(replace(replace(title, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;');
    RETURN format('<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s">', w, h, w, h)
        || '<style>'
        || 'text{font-family:sans-serif;font-size:12px;fill:#222}'
        || '.title{font-size:15px;font-weight:bold}.tick{font-size:11px;fill:#555}.label{font-size:12px}'
        || '.grid{stroke:#e4e4e4;stroke-width:1}.frame{fill:none;stroke:#888}'
        || '.legendbox{fill:#fff;fill-opacity:0.85;stroke:#ccc}'
        || 'polyline{fill:none;stroke-width:2}line.loss,polyline.loss{stroke:#1f77b4;stroke-width:2}'
        || 'line.train,polyline.train{stroke:#2ca02c;stroke-width:2;stroke-dasharray:6 3}'
        || 'line.val,polyline.val{stroke:#ff7f0e;stroke-width:2}'
        || 'circle.loss{fill:#1f77b4}circle.train{fill:#2ca02c}circle.val{fill:#ff7f0e}'
        || 'line.best{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}text.best{fill:#d62728;font-size:11px}'
        || '</style>'
        || format('<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>', w, h)
        || format('<text class="title" x="%s" y="28" text-anchor="middle">%s</text>', w / 2, title)
        || body
        || '</svg>';
END;
$fn$;


CREATE FUNCTION gnn.train(
    graph        text,
    model        text    DEFAULT 'graphsage',
    task         text    DEFAULT 'node_classification',
    name         text    DEFAULT NULL,
    hidden       int     DEFAULT NULL,   -- NULL: the task's default (64)
    layers       int     DEFAULT 2,
    epochs       int     DEFAULT NULL,   -- 100; link prediction 300 with patience 50
    lr           float8  DEFAULT NULL,   -- 0.01
    weight_decay float8  DEFAULT NULL,   -- 5e-4; link prediction 0
    dropout      float8  DEFAULT NULL,   -- 0.5; link prediction 0
    device       text    DEFAULT 'auto',
    seed         int     DEFAULT NULL,
    wait         boolean DEFAULT false,
    options      jsonb   DEFAULT '{}',
    deploy       text    DEFAULT NULL)   -- 'always', 'if_better' (its validation metric beats the deployed one's)
RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_train' LANGUAGE C VOLATILE;

-- The memory a job would need, before it runs: gnn._estimate takes gnn.train's
-- arguments and estimates exactly the job gnn.train would start (gnn.train
-- refuses one whose host total is over gnn.max_job_memory).  options as
-- gnn.train's, plus "task" ('node_classification', 'regression',
-- 'link_prediction').
CREATE FUNCTION gnn._estimate(
    graph text, model text, task text, name text, hidden int, layers int, epochs int,
    lr float8, weight_decay float8, dropout float8, device text, seed int, wait boolean,
    options jsonb)
RETURNS TABLE (item text, bytes bigint, note text)
AS 'MODULE_PATHNAME', 'gnn_estimate_job' LANGUAGE C VOLATILE;

-- Its defaults are gnn.train's: the estimate of gnn.estimate('g') is the job
-- gnn.train('g') would start (GraphSAGE, the task's hidden width, 2 layers).
CREATE FUNCTION gnn.estimate(
    graph   text,
    model   text  DEFAULT 'graphsage',
    hidden  int   DEFAULT NULL,
    layers  int   DEFAULT 2,
    options jsonb DEFAULT '{}',
    device  text  DEFAULT 'auto')
RETURNS TABLE (item text, bytes bigint, note text)
LANGUAGE sql VOLATILE
AS $fn$
    SELECT * FROM gnn._estimate(graph, model, coalesce(options->>'task', 'node_classification'), NULL,
                                hidden, layers, NULL, NULL, NULL, NULL, device, 0, false,
                                coalesce(options, '{}') - 'task')
$fn$;

-- Waits for a job; interrupting the wait (statement_timeout, pg_cancel_backend,
-- a terminated session) cancels the job when cancel_on_interrupt is true, and
-- by default (NULL) when this session started the job.
CREATE FUNCTION gnn.wait(job bigint, timeout interval DEFAULT NULL, cancel_on_interrupt boolean DEFAULT NULL)
RETURNS gnn.jobs
AS 'MODULE_PATHNAME', 'gnn_wait' LANGUAGE C VOLATILE;

CREATE FUNCTION gnn.cancel(job bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'gnn_cancel' LANGUAGE C VOLATILE;

-- Drops the calling role's model (every version, or one), with its shared
-- results.  Like gnn.drop_graph and gnn.cache_drop it answers whether
-- anything was dropped; a missing model is an error unless if_exists.
-- The version of a model name that calls use by default (else the latest):
-- version => n, or strategy => 'most_recent', 'best_score' (the best
-- validation metric: accuracy, AUC, or the lowest MAE), 'rollback' (the one
-- deployed before the current deployment).  Returns the deployed version.
CREATE FUNCTION gnn.deploy(name text, version int DEFAULT NULL, strategy text DEFAULT NULL)
RETURNS int
AS 'MODULE_PATHNAME', 'gnn_deploy' LANGUAGE C VOLATILE;

-- A model's weights as safetensors: PyG's module layout for GCN, mean
-- GraphSAGE and node2vec (torch_geometric.nn.models.GCN / GraphSAGE /
-- Node2Vec load them), gnn's own for the others; the header's metadata says
-- which, and what the model is (docs/serving.md).
CREATE FUNCTION gnn.export_model(name text, version int DEFAULT NULL)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gnn_export_model' LANGUAGE C STABLE;

-- Weights trained elsewhere (safetensors, either layout) as the next version
-- of a model name, for a graph: checked against its feature width (node2vec:
-- its node count) and its classes; returns the version.
CREATE FUNCTION gnn.import_model(name text, blob bytea, graph text, task text DEFAULT 'node_classification',
                                 options jsonb DEFAULT '{}')
RETURNS int
AS 'MODULE_PATHNAME', 'gnn_import_model' LANGUAGE C VOLATILE;

CREATE FUNCTION gnn.drop_model(name text, version int DEFAULT NULL, if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'gnn_drop_model' LANGUAGE C VOLATILE;

-- ------------------------------------------------------------------ using models
CREATE FUNCTION gnn._embedding_rows(model text, layer int DEFAULT NULL, version int DEFAULT NULL,
                                    node_type text DEFAULT NULL, as_of timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, embedding real[], key text)
AS 'MODULE_PATHNAME', 'gnn_embedding_rows' LANGUAGE C STABLE;

-- Every node's embedding (default: the last hidden layer) into a table
-- (id bigint PRIMARY KEY, embedding real[]) created if missing, its rows
-- replaced in the caller's transaction; or, with column_name =>, into a real[]
-- column of the node table named by table_name.  Returns the rows written.
-- "into" and "column" are the deprecated names of table_name and column_name
-- (reserved words, so they needed quotes); they still work.
-- incremental => true (a table written by an earlier gnn.embed of the same
-- model and layer, the graph tracked and refreshed since): only the rows
-- whose value can have changed are recomputed, new nodes' rows inserted and
-- removed nodes' rows deleted; equal to a full write within float rounding.
-- Without the history to follow (a reload, a restart, another model) it
-- writes every row, saying so.
-- options: {"type": "vector"} writes pgvector's vector(d) (a new table or
-- column; an existing vector column is written as vector without it, and
-- one of another dimension is an error), "index": "hnsw" | "ivfflat" adds
-- that index after the rows are written, for "distance": "cosine" (the
-- default) | "l2" | "ip".  pgvector is found at run time, never required.
CREATE FUNCTION gnn.embed(model text, table_name text DEFAULT NULL, layer int DEFAULT NULL,
                          column_name text DEFAULT NULL,
                          id_column text DEFAULT 'id', version int DEFAULT NULL, node_type text DEFAULT NULL,
                          incremental boolean DEFAULT false, options jsonb DEFAULT '{}',
                          as_of timestamptz DEFAULT NULL, "into" text DEFAULT NULL, "column" text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_embed' LANGUAGE C VOLATILE;

-- How many nodes this session's last gnn.embed computed (all of them, or an
-- incremental write's share).
CREATE FUNCTION gnn.embed_recomputed() RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_embed_recomputed' LANGUAGE C VOLATILE;

-- Predictions, embeddings and neighbours of a model trained with time-aware
-- sampling (metrics.temporal) never read a row's future: every row is
-- answered on a neighbourhood sampled with the training fan-outs as of its
-- own time (its seed time, or the job's options.seed_time), as the job
-- evaluated it.  as_of => answers every row as of that one moment instead;
-- on a model trained without time it is an error.
-- gnn.predict's, gnn.similar's and gnn.embedding's options.peers (with coordinator,
-- dist_timeout_ms): a model trained over several servers, answered over
-- every part (each server its part, the halo's rows of each layer from their
-- owners), every node or the ones asked for; gnn.similar ranks by one exact
-- scan of every node's row.
-- The planner's row counts for the serving functions (k, or the nodes asked for).
CREATE FUNCTION gnn._rows_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'gnn_rows_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION gnn.predict(model text, nodes bigint[] DEFAULT NULL, version int DEFAULT NULL,
                            as_of timestamptz DEFAULT NULL, probabilities boolean DEFAULT false,
                            options jsonb DEFAULT NULL)
RETURNS TABLE (id bigint, label int, score real, class text, key text, class_probabilities real[])
AS 'MODULE_PATHNAME', 'gnn_predict' LANGUAGE C STABLE
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

-- The same for nodes named by their keys as text (text and uuid keys).
CREATE FUNCTION gnn.predict(model text, keys text[], version int DEFAULT NULL,
                            as_of timestamptz DEFAULT NULL, probabilities boolean DEFAULT false,
                            options jsonb DEFAULT NULL)
RETURNS TABLE (id bigint, label int, score real, class text, key text, class_probabilities real[])
AS 'MODULE_PATHNAME', 'gnn_predict' LANGUAGE C STABLE
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

CREATE FUNCTION gnn.embedding(model text, node bigint, version int DEFAULT NULL,
                              as_of timestamptz DEFAULT NULL, options jsonb DEFAULT NULL)
RETURNS real[]
AS 'MODULE_PATHNAME', 'gnn_embedding' LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION gnn.embedding(model text, node text, version int DEFAULT NULL,
                              as_of timestamptz DEFAULT NULL, options jsonb DEFAULT NULL)
RETURNS real[]
AS 'MODULE_PATHNAME', 'gnn_embedding' LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION gnn.similar(model text, node bigint, k int DEFAULT 10, version int DEFAULT NULL,
                            as_of timestamptz DEFAULT NULL, exact boolean DEFAULT false,
                            options jsonb DEFAULT NULL)
RETURNS TABLE (id bigint, score real, key text)
AS 'MODULE_PATHNAME', 'gnn_similar' LANGUAGE C STABLE ROWS 10
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

CREATE FUNCTION gnn.similar(model text, node text, k int DEFAULT 10, version int DEFAULT NULL,
                            as_of timestamptz DEFAULT NULL, exact boolean DEFAULT false,
                            options jsonb DEFAULT NULL)
RETURNS TABLE (id bigint, score real, key text)
AS 'MODULE_PATHNAME', 'gnn_similar' LANGUAGE C STABLE ROWS 10
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

-- ---- links
-- A link model's score of pairs (link prediction, node2vec): the dot product
-- of the two embeddings (sigmoid(score): the link's probability under the
-- model).  Pairs src[i] -> dst[i], by ids (bigint[]) or keys (text[]); on a
-- typed graph the relation's (edge_type, else the model's) source and
-- destination types.
CREATE FUNCTION gnn.score(model text, src bigint[], dst bigint[], edge_type text DEFAULT NULL,
                          version int DEFAULT NULL)
RETURNS TABLE (src bigint, dst bigint, score real, src_key text, dst_key text)
AS 'MODULE_PATHNAME', 'gnn_score' LANGUAGE C STABLE ROWS 100
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

CREATE FUNCTION gnn.score(model text, src text[], dst text[], edge_type text DEFAULT NULL,
                          version int DEFAULT NULL)
RETURNS TABLE (src bigint, dst bigint, score real, src_key text, dst_key text)
AS 'MODULE_PATHNAME', 'gnn_score' LANGUAGE C STABLE ROWS 100
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

CREATE FUNCTION gnn.score(model text, src bigint, dst bigint, edge_type text DEFAULT NULL,
                          version int DEFAULT NULL)
RETURNS real
AS 'MODULE_PATHNAME', 'gnn_score_pair' LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION gnn.score(model text, src text, dst text, edge_type text DEFAULT NULL,
                          version int DEFAULT NULL)
RETURNS real
AS 'MODULE_PATHNAME', 'gnn_score_pair' LANGUAGE C STABLE PARALLEL RESTRICTED;

-- The k best new partners of a node by the model's link score (customers ->
-- products with edge_type): its out-neighbours through the relation (any
-- edge without one) and itself left out with exclude_existing.  Like
-- gnn.similar it answers from an approximate index (by dot product) once
-- the model's embeddings have gnn.similar_index_min_rows rows of the
-- destination type; exact => true scans every row.
CREATE FUNCTION gnn.recommend(model text, node bigint, k int DEFAULT 10, exclude_existing boolean DEFAULT true,
                              edge_type text DEFAULT NULL, version int DEFAULT NULL, exact boolean DEFAULT false)
RETURNS TABLE (id bigint, score real, key text)
AS 'MODULE_PATHNAME', 'gnn_recommend' LANGUAGE C STABLE ROWS 10
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

CREATE FUNCTION gnn.recommend(model text, node text, k int DEFAULT 10, exclude_existing boolean DEFAULT true,
                              edge_type text DEFAULT NULL, version int DEFAULT NULL, exact boolean DEFAULT false)
RETURNS TABLE (id bigint, score real, key text)
AS 'MODULE_PATHNAME', 'gnn_recommend' LANGUAGE C STABLE ROWS 10
    SUPPORT gnn._rows_support PARALLEL RESTRICTED;

-- ---- sampling
-- Neighbour sampling from seed nodes: fanouts[h] in-neighbours per node at
-- hop h+1 (-1 = all), uniformly, with or without replacement.  Rows are the
-- sampled edges src -> dst of each hop (layer 1 = edges into the seeds), in
-- original ids.  The same seed gives the same rows.  On a schema graph the
-- seeds are keys of one table (node_type, default the target): bigint keys
-- as seeds, any keys as text in keys; seed_times (one per seed) sample only
-- rows whose time is not later than their seed's (NULL: no bound).
CREATE FUNCTION gnn.sample_neighbors(graph text, seeds bigint[], fanouts int[],
                                     replace boolean DEFAULT false, seed int DEFAULT NULL,
                                     node_type text DEFAULT NULL, keys text[] DEFAULT NULL,
                                     seed_times timestamptz[] DEFAULT NULL)
RETURNS TABLE (layer int, src bigint, dst bigint, src_key text, dst_key text, src_type text, dst_type text)
AS 'MODULE_PATHNAME', 'gnn_sample_neighbors' LANGUAGE C VOLATILE;

-- Random walks along out-edges, one per start (walk numbered from 1, step 0 =
-- the start); p and q bias them as node2vec does (1, 1 = uniform).  A walk
-- ends early at a node without out-edges.
CREATE FUNCTION gnn.random_walk(graph text, starts bigint[], length int,
                                p float8 DEFAULT 1, q float8 DEFAULT 1, seed int DEFAULT NULL,
                                node_type text DEFAULT NULL, keys text[] DEFAULT NULL)
RETURNS TABLE (walk int, step int, node bigint, key text, type text)
AS 'MODULE_PATHNAME', 'gnn_random_walk_sql' LANGUAGE C VOLATILE;

-- ---- partitioning
-- Split a graph's nodes into parts (METIS k-way with balance constraints,
-- a one-pass streaming partitioner, or random); the assignment is kept with
-- the graph (Cluster-GCN training uses it) until the next call, a drop or a
-- replace.  gnn.partition_objective picks METIS's objective (cut, volume),
-- gnn.max_partition_memory caps METIS's estimated memory.
CREATE FUNCTION gnn.partition(graph text, parts int, method text DEFAULT 'metis',
                              balance text[] DEFAULT '{nodes,train}', seed int DEFAULT NULL)
RETURNS TABLE (node bigint, part int, key text)
AS 'MODULE_PATHNAME', 'gnn_partition' LANGUAGE C VOLATILE;

-- One row per part and an overall row (part IS NULL).  balance_*: a part's
-- load over the mean load; overall, max/mean.  cut_fraction: cut arcs over
-- arcs.  seconds: the partitioning time (overall row).
CREATE FUNCTION gnn.partition_stats(graph text)
RETURNS TABLE (part int, nodes bigint, edges bigint, train_nodes bigint, edges_cut bigint,
               halo_nodes bigint, cut_fraction float8, balance_nodes float8, balance_train float8,
               balance_edges float8, method text, seconds float8)
AS 'MODULE_PATHNAME', 'gnn_partition_stats' LANGUAGE C STABLE;

-- ---- shared inference results
-- Full-graph results (embeddings of a layer, class probabilities) computed
-- once per model row and graph version and shared by every session of the
-- model's owner; gnn.max_cache_memory bounds them (least recently used go).
CREATE FUNCTION gnn._cache_entries(
    OUT model text, OUT version int, OUT owner regrole, OUT graph text, OUT graph_version bigint,
    OUT kind text, OUT layer int, OUT nodes bigint, OUT dim int, OUT bytes bigint, OUT hits bigint,
    OUT state text, OUT created timestamptz, OUT seconds float8, OUT misses bigint,
    OUT index text, OUT index_bytes bigint, OUT index_seconds float8,
    OUT calls bigint, OUT mean_ms float8, OUT p99_ms float8, OUT index_calls bigint, OUT link_index text,
    OUT computed bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gnn_cache_entries' LANGUAGE C VOLATILE;

-- What is cached: the caller's models' results (every role's for a superuser).
-- misses: calls that found the result missing or being computed; index and
-- link_index: an embedding result's approximate indexes for gnn.similar
-- (cosine) and gnn.recommend (dot product): none, building, ready, failed;
-- index_bytes, index_seconds, index_calls: their sizes, build times and the
-- calls they answered, summed; calls,
-- mean_ms, p99_ms: the calls answered from the result, and the mean and
-- 99th percentile of the last 128 calls' times.  state: computing, ready, or
-- stale (of the graph's version before its last refresh: kept as the base
-- the next version's result recomputes only the changed rows from, evicted
-- first); computed: the rows computed to make it (every row, or only those
-- within the model's reach of what a refresh changed).
CREATE VIEW gnn.cache WITH (security_invoker = true) AS SELECT * FROM gnn._cache_entries();
GRANT SELECT ON gnn.cache TO PUBLIC;

-- Empties the shared results of the caller's model (a version, or all);
-- answers whether any were there (as gnn.drop_graph and gnn.drop_model do).
CREATE FUNCTION gnn.cache_drop(model text, version int DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'gnn_cache_drop' LANGUAGE C VOLATILE;

-- ---- several servers on one job (issue 16)
-- One peer's rank of gnn.dist_check, run there over libpq (not for direct use).
CREATE FUNCTION gnn._dist_rank(job text, rank int, size int, coordinator text, timeout_ms int,
                               graph text, floats bigint,
                               OUT server text, OUT engine text, OUT meet_ms float8, OUT allreduce_ms float8,
                               OUT part int, OUT halo bigint, OUT halo_missing bigint, OUT halo_sum float8)
RETURNS record
AS 'MODULE_PATHNAME', 'gnn_dist_rank_fn' LANGUAGE C VOLATILE;

-- Checks that this server (rank 0, the coordinator) and the peers (ranks
-- 1..n, libpq conninfos) can run a job together: each is reached as the
-- calling role (a role that is not superuser must use a password), meets the
-- others through gnn.dist_store here, sums an allreduce of `megabytes`, and,
-- with graph (one part per server, loaded with part_column / part), fetches
-- its halo's features from their owners, as a training job does: halo rows
-- fetched, halo_missing (0: a halo node no rank owns, or two ranks do, fails
-- the check naming it, as it would fail a job), and the sum of the fetched
-- values.  coordinator: the conninfo
-- the peers reach this server by (default: its socket, for one machine).
-- Any failure is an error naming the rank and the server, within timeout_ms.
CREATE FUNCTION gnn.dist_check(peers text[], graph text DEFAULT NULL, coordinator text DEFAULT NULL,
                               timeout_ms int DEFAULT 30000, megabytes int DEFAULT 1)
RETURNS TABLE (rank int, server text, engine text, connect_ms float8, meet_ms float8, allreduce_ms float8,
               part int, halo bigint, halo_missing bigint, halo_sum float8)
AS 'MODULE_PATHNAME', 'gnn_dist_check' LANGUAGE C VOLATILE;

-- One peer's rank of a training job over several servers (gnn.train with
-- options.peers): gnn.train's own arguments, then the job's; run there over
-- libpq by the coordinator's worker, as the job's role (not for direct use).
CREATE FUNCTION gnn._train_rank(graph text, model text, task text, name text, hidden int, layers int,
                                epochs int, lr float8, weight_decay float8, dropout float8, device text,
                                seed int, wait boolean, options jsonb,
                                job text, rank int, size int, coordinator text, timeout_ms int,
                                OUT epochs_run int, OUT seconds float8, OUT own_nodes bigint, OUT halo_nodes bigint,
                                OUT device text, OUT device_note text)
RETURNS record
AS 'MODULE_PATHNAME', 'gnn_train_rank' LANGUAGE C VOLATILE;

-- One peer's rank of gnn.embed over the parts of a model trained over
-- several servers (options.peers): the model as its serialized bytes, the
-- pass's layer, then the job's; the rows written here (options.write
-- "local"), or 0 when they went to the coordinator.  Run there over libpq,
-- as the calling role (not for direct use).
CREATE FUNCTION gnn._infer_rank(model bytea, graph text, layer int, softmax boolean, row_normalise boolean,
                                job text, rank int, size int, coordinator text, timeout_ms int,
                                local_table text, node_type text DEFAULT NULL, temporal text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_infer_rank' LANGUAGE C VOLATILE;

-- The rows a write over parts is inserting (this backend's, inside that
-- statement; empty anywhere else).
CREATE FUNCTION gnn._dist_rows(OUT id bigint, OUT embedding real[], OUT key text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gnn_dist_rows' LANGUAGE C VOLATILE;


-- DDL on tables a graph follows (gnn.track): an ALTER marks the graph for
-- a full reload at its next refresh (a rewrite, a retyped, renamed or
-- dropped column, disabled triggers: nothing a row trigger sees); a dropped
-- table ends its following (gnn.graphs.tracked false).  Enabled ALWAYS, as
-- the capture triggers are: replica-role sessions are seen too.
CREATE FUNCTION gnn._ddl_watch() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'gnn_ddl_watch' LANGUAGE C;
CREATE EVENT TRIGGER gnn_ddl_watch ON ddl_command_end EXECUTE FUNCTION gnn._ddl_watch();
CREATE EVENT TRIGGER gnn_drop_watch ON sql_drop EXECUTE FUNCTION gnn._ddl_watch();
ALTER EVENT TRIGGER gnn_ddl_watch ENABLE ALWAYS;
ALTER EVENT TRIGGER gnn_drop_watch ENABLE ALWAYS;
