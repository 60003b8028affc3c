// alloc.cs - allocates known numbers of objects of its own classes.
// Exactly 10000 Node, 2500 Pair, 100 Node[] of length 50, 10 int[] of length 1000.
using System;
using System.Runtime.CompilerServices;

sealed class Node
{
    public Node Next;
    public int Value;
}

sealed class Pair
{
    public long A, B;
}

static class AllocProgram
{
    public static object Sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static Node MakeNode(int v, Node next) { return new Node { Value = v, Next = next }; }

    static int Main()
    {
        const int Nodes = 10000, Pairs = 2500, NodeArrays = 100, IntArrays = 10;
        Node head = null;
        for (int i = 0; i < Nodes; i++)
            head = MakeNode(i, head);
        int count = 0;
        for (Node n = head; n != null; n = n.Next) count++;

        long psum = 0;
        for (int i = 0; i < Pairs; i++) {
            var p = new Pair { A = i, B = 2 * i };
            Sink = p;
            psum += p.A + p.B;
        }
        for (int i = 0; i < NodeArrays; i++) Sink = new Node[50];
        for (int i = 0; i < IntArrays; i++) Sink = new int[1000];

        Console.WriteLine("Node objects: " + count);
        Console.WriteLine("Pair objects: " + Pairs + " (sum " + psum + ")");
        Console.WriteLine("Node[50] arrays: " + NodeArrays);
        Console.WriteLine("int[1000] arrays: " + IntArrays);
        GC.KeepAlive(head);
        return 0;
    }
}
