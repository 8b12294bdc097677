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
CREATE FUNCTION gnn.load_graph(
    name            text,
    edges           regclass,
    src             text     DEFAULT 'src',
    dst             text     DEFAULT 'dst',
    nodes           regclass DEFAULT NULL,
    id              text     DEFAULT 'id',
    features        text     DEFAULT NULL,
    label           text     DEFAULT NULL,
    split           text     DEFAULT NULL,
    weight          text     DEFAULT NULL,
    undirected      boolean  DEFAULT false,
    replace         boolean  DEFAULT false,
    sparse_features regclass DEFAULT NULL,
    sparse_id       text     DEFAULT 'id',
    sparse_index    text     DEFAULT 'feature',
    sparse_value    text     DEFAULT 'value',
    skip_dangling   boolean  DEFAULT false)
RETURNS gnn.graph_info
AS 'MODULE_PATHNAME', 'gnn_load_graph' LANGUAGE C VOLATILE;

CREATE FUNCTION gnn.drop_graph(name text, if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'gnn_drop_graph' LANGUAGE C VOLATILE;

CREATE FUNCTION gnn.graph_list() RETURNS SETOF gnn.graph_info
AS 'MODULE_PATHNAME', 'gnn_graph_list' LANGUAGE C VOLATILE;

-- The graphs of this database that the current role owns (all of them for a superuser).
CREATE VIEW gnn.graphs AS SELECT * FROM gnn.graph_list();

CREATE FUNCTION gnn.memory_used() RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_memory_used' LANGUAGE C VOLATILE;

-- direction: 'out' (edges leaving node), 'in' (edges arriving), 'both'
CREATE FUNCTION gnn.degree(graph text, node bigint, direction text DEFAULT 'out')
RETURNS bigint
AS 'MODULE_PATHNAME', 'gnn_degree' LANGUAGE C STABLE;

CREATE FUNCTION gnn.neighbors(graph text, node bigint, direction text DEFAULT 'out')
RETURNS TABLE (neighbor bigint, weight real)
AS 'MODULE_PATHNAME', 'gnn_neighbors' LANGUAGE C STABLE;

GRANT USAGE ON SCHEMA gnn TO PUBLIC;
GRANT SELECT ON gnn.graphs TO PUBLIC;
