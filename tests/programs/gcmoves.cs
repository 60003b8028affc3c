// gcmoves.cs - allocation churn with explicit collections: nursery objects get
// promoted (moved) into the major heap, roots are scanned, the heap may resize.
using System;
using System.Collections.Generic;

sealed class Churn
{
    public Churn Link;
    public byte[] Payload;
}

static class GCMovesProgram
{
    static List<Churn> survivors = new List<Churn>();

    static int Main()
    {
        const int Rounds = 20, PerRound = 5000;
        long garbage = 0;
        for (int r = 0; r < Rounds; r++) {
            Churn prev = null;
            for (int i = 0; i < PerRound; i++) {
                var c = new Churn { Link = prev, Payload = new byte[16 + (i & 63)] };
                if (i % 10 == 0) survivors.Add(c); else garbage++;
                prev = c;
            }
            GC.Collect(0);   // minor: promote the survivors (moves)
            if (r % 5 == 4)
                GC.Collect(); // major
        }
        GC.Collect();
        Console.WriteLine("rounds: " + Rounds);
        Console.WriteLine("survivors: " + survivors.Count);
        Console.WriteLine("garbage: " + garbage);
        return 0;
    }
}
