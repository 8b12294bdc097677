/*
 * test_subgraph_train: Cluster-GCN and GraphSAINT (random walk) training on
 * Cora reach the 78% test accuracy (full-graph evaluation, test
 * accuracy at the best-validation epoch); cancellation between minibatches;
 * bad settings.  Skips when ../shared/data is missing.
 */
#include "check.h"
#include "graph/dataset.h"
#include "train/train_subgraph.h"

static bool
stop_after(void *arg)
{
	int		   *left = arg;

	return (*left)-- <= 0;
}

static double
run(const gnn_graph *g, bool saint, gnn_model_kind kind, int seeds, const gnn_subgraph_config *sc)
{
	double		sum = 0;

	for (int s = 0; s < seeds; s++)
	{
		gnn_train_config cfg;
		gnn_train_result res;
		gnn_error	err;
		gnn_status	st;

		gnn_train_config_default(kind, &cfg);
		cfg.seed = (uint64_t) s + 1;
		cfg.epochs = saint ? 200 : 100;
		st = saint ? gnn_train_saint(g, &cfg, sc, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err)
			: gnn_train_cluster(g, &cfg, sc, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err);
		if (st != GNN_OK)
		{
			NOTE("%s failed: %s", saint ? "saint" : "cluster", err.msg);
			return -1;
		}
		NOTE("  %s %s seed %d: test %.4f val %.4f (best epoch %d of %d, %.2f s)", saint ? "saint_rw" : "cluster",
			 gnn_model_kind_name(kind), s + 1, res.best.test_acc, res.best.val_acc, res.best_epoch,
			 res.epochs_run, res.seconds);
		sum += res.best.test_acc;
	}
	return sum / seeds;
}

int
main(void)
{
	const char *dir = check_data_dir();
	char		path[600];
	gnn_dataset ds;
	gnn_error	err;
	gnn_subgraph_config sc;
	int			seeds = getenv("GNN_TEST_SEEDS") ? atoi(getenv("GNN_TEST_SEEDS")) : 2;

	if (!dir)
	{
		CHECK_SKIP("no ../shared/data", "cluster-gcn and graphsaint on cora");
		return check_done();
	}
	snprintf(path, sizeof(path), "%s/cora", dir);
	if (gnn_dataset_load(path, 0, &ds, &err) != GNN_OK)
	{
		CHECK_SKIP(err.msg, "cluster-gcn and graphsaint on cora");
		return check_done();
	}
	gnn_subgraph_config_default(&sc);
	{
		double		acc = run(&ds.g, false, GNN_MODEL_GCN, seeds, &sc);

		CHECK(acc >= 0.78, "cluster-gcn (gcn) on cora: mean test accuracy %.4f >= 0.78", acc);
		acc = run(&ds.g, false, GNN_MODEL_SAGE, seeds, &sc);
		CHECK(acc >= 0.78, "cluster-gcn (graphsage) on cora: mean test accuracy %.4f >= 0.78", acc);
		acc = run(&ds.g, true, GNN_MODEL_GCN, seeds, &sc);
		CHECK(acc >= 0.78, "graphsaint rw (gcn) on cora: mean test accuracy %.4f >= 0.78", acc);
		acc = run(&ds.g, true, GNN_MODEL_SAGE, seeds, &sc);
		CHECK(acc >= 0.78, "graphsaint rw (graphsage) on cora: mean test accuracy %.4f >= 0.78", acc);
	}
	{
		gnn_train_config cfg;
		gnn_train_result res;
		int			left = 3;

		gnn_train_config_default(GNN_MODEL_GCN, &cfg);
		CHECK(gnn_train_cluster(&ds.g, &cfg, &sc, NULL, NULL, NULL, stop_after, &left, NULL, &res, &err) == GNN_ERR_CANCELLED,
			  "cluster-gcn stops between minibatches: %s", err.msg);
		left = 2;
		CHECK(gnn_train_saint(&ds.g, &cfg, &sc, NULL, NULL, NULL, stop_after, &left, NULL, &res, &err) == GNN_ERR_CANCELLED,
			  "graphsaint stops between minibatches");
		sc.num_parts = (int32_t) ds.g.num_nodes + 1;
		CHECK(gnn_train_cluster(&ds.g, &cfg, &sc, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err) == GNN_ERR_INVALID,
			  "num_parts over the node count refused: %s", err.msg);
		sc.num_parts = 0;
		sc.walk_length = -1;
		CHECK(gnn_train_saint(&ds.g, &cfg, &sc, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err) == GNN_ERR_INVALID,
			  "negative walk_length refused");
	}
	gnn_dataset_free(&ds);
	return check_done();
}
