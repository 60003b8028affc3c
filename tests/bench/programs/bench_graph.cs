// bench_graph.cs - a large object graph for `mlpd heapshots --retained` (tests/bench/retained_speed.sh):
// N GraphNode objects in a static array, each with a GraphLeaf and references to two other nodes
// (cross references: most nodes are reached from several places, so the dominator tree is shallow
// but not trivial), and every 64th node also heads a chain of 16 ChainLink objects. N defaults to
// 2 500 000, for over 5 million objects.
using System;

sealed class GraphLeaf { public long Value; }
sealed class ChainLink { public ChainLink Next; public long Value; }
sealed class GraphNode
{
    public GraphNode Left, Right;
    public GraphLeaf Leaf;
    public ChainLink Chain;
}

static class BenchGraph
{
    static GraphNode[] nodes;

    static int Main(string[] args)
    {
        int n = args.Length > 0 ? int.Parse(args[0]) : 2500000;
        nodes = new GraphNode[n];
        for (int i = 0; i < n; i++) nodes[i] = new GraphNode { Leaf = new GraphLeaf { Value = i } };
        var rng = new Random(42);
        for (int i = 0; i < n; i++)
        {
            nodes[i].Left = nodes[rng.Next(n)];
            nodes[i].Right = i + 1 < n ? nodes[i + 1] : null;
            if (i % 64 == 0)
                for (int k = 0; k < 16; k++) nodes[i].Chain = new ChainLink { Next = nodes[i].Chain, Value = k };
        }
        Console.WriteLine("nodes: " + nodes.Length);
        return 0;
    }
}
