# pg_cron schedules a nightly retrain: a new model version appears and
# cron.job_run_details reports success; a failing scheduled run reports failure.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use Time::HiRes;

my $libdir = `pg_config --pkglibdir`;
chomp $libdir;
plan skip_all => 'pg_cron is not installed (postgresql-15-cron)' unless -f "$libdir/pg_cron.so";

my $node = gnn_node('cron', preload => 'gnn,pg_cron', conf => q{
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 24
});
$node->safe_psql('postgres', q{
	CREATE EXTENSION gnn;
	CREATE EXTENSION pg_cron;
	CREATE TABLE n AS SELECT id, (id % 2)::int AS label,
		CASE WHEN id < 40 THEN 'train' WHEN id < 100 THEN 'val' ELSE 'test' END AS split,
		ARRAY[(id % 2)::real, random()::real] AS feat FROM generate_series(0, 199) id;
	CREATE TABLE e AS SELECT id AS src, (id + 2) % 200 AS dst FROM generate_series(0, 199) id;
	SELECT gnn.load_graph('cora', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split',
	                      undirected => true);
	SELECT gnn.train('cora', name => 'nightly', model => 'gcn', epochs => 5, wait => true);
});
is($node->safe_psql('postgres', "SELECT max(version) FROM gnn.models WHERE name = 'nightly'"), '1', 'version 1 exists');

# pg_cron 1.4 schedules by the minute: both runs happen at the next minute boundary
$node->safe_psql('postgres', q{
	SELECT cron.schedule('nightly', '* * * * *',
		$$SELECT gnn.train('cora', name => 'nightly', model => 'gcn', epochs => 5, wait => true)$$);
	SELECT cron.schedule('broken', '* * * * *',
		$$SELECT gnn.train('no_such_graph', name => 'broken', wait => true)$$);
});
# both counts in one query per poll, polled more slowly as the wait grows
# (the wait is up to a minute; a poll every 100 ms took 15 s of CPU from the other tests)
my ($ok_runs, $bad_runs) = (0, 0);
my $end = Time::HiRes::time() + 150;
for (my $i = 0; Time::HiRes::time() < $end; $i++)
{
	($ok_runs, $bad_runs) = split /\|/, $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE j.jobname = 'nightly' AND d.status = 'succeeded'), "
		  . "count(*) FILTER (WHERE j.jobname = 'broken' AND d.status = 'failed') "
		  . "FROM cron.job_run_details d JOIN cron.job j USING (jobid)");
	last if $ok_runs > 0 && $bad_runs > 0;
	poll_pause($i);
}
$node->safe_psql('postgres', "SELECT cron.unschedule('nightly'); SELECT cron.unschedule('broken')");
ok($ok_runs > 0, 'the scheduled retrain reports success in cron.job_run_details');
ok($node->safe_psql('postgres', "SELECT max(version) FROM gnn.models WHERE name = 'nightly'") >= 2,
	'and a new model version appeared');
ok($bad_runs > 0, 'a failing scheduled run reports failure');
# pg_cron's background-worker mode does not always carry the error text; the log does
note('return_message: ' . $node->safe_psql('postgres',
	"SELECT string_agg(return_message, ' | ') FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'broken'"));
like(slurp_file($node->logfile), qr/graph "no_such_graph" does not exist/, 'the failed run\'s error is in the server log');
$node->stop;
done_testing();
