# 1000 load/drop cycles, in 1000 separate transactions over 4 sessions,
# leave shared memory where it started: gnn.memory_used() and the number of
# DSM segments (files in pg_dynshmem: dynamic_shared_memory_type = mmap, so
# no other cluster's segments are counted).
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

my $cycles = $ENV{GNN_CYCLES} // 1000;
my $node = gnn_node('cycles', conf => "dynamic_shared_memory_type = mmap\nmax_parallel_workers_per_gather = 0");
$node->safe_psql('postgres', q{
	CREATE EXTENSION gnn;
	CREATE TABLE e AS SELECT s AS src, (s * 7 + k) % 2000 AS dst FROM generate_series(0, 1999) s, generate_series(1, 4) k;
	CREATE TABLE n AS SELECT id, ARRAY[id % 3, id % 5]::real[] AS feat FROM generate_series(0, 1999) id;
	SELECT gnn.load_graph('keep', 'e');
});
my $mem0 = $node->safe_psql('postgres', 'SELECT gnn.memory_used()');
my $files0 = dsm_files();
ok($files0 >= 2, "before: $files0 DSM segments, $mem0 bytes of graph memory");

my $per = int($cycles / 4);
$node->pgbench("-n -c 4 -j 2 -t $per", 0, [qr/processed: @{[4 * $per]}\/@{[4 * $per]}/], [qr/^$/],
	"$cycles load/drop cycles in separate transactions",
	{ 'cycle' => q{SELECT gnn.load_graph('c' || :client_id, 'e', nodes => 'n', features => 'feat', undirected => true);
SELECT gnn.degree('c' || :client_id, 0);
SELECT gnn.drop_graph('c' || :client_id);
} });
is($node->safe_psql('postgres', 'SELECT gnn.memory_used()'), $mem0, 'gnn.memory_used() is back where it started');
is(dsm_files(), $files0, 'so is the number of DSM segments');
is($node->safe_psql('postgres', "SELECT string_agg(name, ',') FROM gnn.graphs"), 'keep', 'only the kept graph is loaded');

# the same with replace => true, in one transaction
$node->safe_psql('postgres', qq{DO \$\$ BEGIN FOR i IN 1..200 LOOP
	PERFORM gnn.load_graph('r', 'e', replace => true); PERFORM gnn.degree('r', 0); END LOOP;
	PERFORM gnn.drop_graph('r'); END \$\$});
is($node->safe_psql('postgres', 'SELECT gnn.memory_used()'), $mem0, '200 replaces in one transaction: memory back');
is(dsm_files(), $files0, 'and DSM segments back');
$node->stop;
done_testing();
