-- The catalog of the gnn extension as one JSON document (test/docs/reference.sh).
SET client_min_messages = warning;
CREATE EXTENSION gnn;
SELECT jsonb_build_object(
  'functions', (
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'name', p.proname,
        'identity', pg_get_function_identity_arguments(p.oid),
        'arguments', pg_get_function_arguments(p.oid),
        'result', pg_get_function_result(p.oid),
        'retset', p.proretset,
        'kind', p.prokind,
        'language', l.lanname,
        'volatility', p.provolatile,
        'strict', p.proisstrict,
        'security_definer', p.prosecdef,
        'comment', obj_description(p.oid, 'pg_proc'))
      ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)), '[]')
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
    WHERE n.nspname = 'gnn'),
  'relations', (
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'name', c.relname,
        'kind', c.relkind,
        'comment', obj_description(c.oid, 'pg_class'),
        'columns', (SELECT jsonb_agg(jsonb_build_object(
                        'name', a.attname,
                        'type', format_type(a.atttypid, a.atttypmod),
                        'not_null', a.attnotnull,
                        'default', pg_get_expr(d.adbin, d.adrelid),
                        'comment', col_description(c.oid, a.attnum)) ORDER BY a.attnum)
                    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped))
      ORDER BY c.relkind, c.relname), '[]')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'gnn' AND c.relkind IN ('r', 'v', 'm', 'p', 'f', 'c')),
  'settings', (
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'name', name, 'vartype', vartype, 'boot_val', boot_val, 'unit', unit,
        'context', context, 'short_desc', short_desc, 'extra_desc', extra_desc,
        'enumvals', enumvals, 'min_val', min_val, 'max_val', max_val) ORDER BY name), '[]')
    FROM pg_settings WHERE name LIKE 'gnn.%')
);
