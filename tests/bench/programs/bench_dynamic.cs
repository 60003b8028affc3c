// Dynamic-method benchmark (issue 22, item 6): compiles and drops many dynamic methods, as a program
// that builds LINQ expression trees, DynamicMethods or compiled regular expressions at run time does.
// Each round compiles a few Expressions (a lambda over a small object graph), a DynamicMethod emitted
// by hand and, every 8th round, a compiled Regex; calls each a few times (allocating) and lets it go;
// collections free their code (Mono's method_free events). argv[0] = rounds (default 2000).
using System;
using System.Collections.Generic;
using System.Linq.Expressions;
using System.Reflection.Emit;
using System.Text.RegularExpressions;

class Item {
  public int Id;
  public string Name;
  public Item(int id, string name) { Id = id; Name = name; }
}

static class BenchDynamic {
  static Func<Item, string> CompileSelector(int k) {
    var p = Expression.Parameter(typeof(Item), "x");
    // x => x.Id > k ? x.Name + "#" + (x.Id * k).ToString() : new string('a', (x.Id & 7) + 1)
    Expression id = Expression.Field(p, "Id");
    Expression name = Expression.Field(p, "Name");
    var concat = typeof(string).GetMethod("Concat", new[] { typeof(string), typeof(string), typeof(string) });
    var toString = typeof(int).GetMethod("ToString", Type.EmptyTypes);
    Expression product = Expression.Multiply(id, Expression.Constant(k));
    var tmp = Expression.Variable(typeof(int), "t");
    Expression text = Expression.Block(new[] { tmp }, Expression.Assign(tmp, product), Expression.Call(tmp, toString));
    Expression yes = Expression.Call(concat, name, Expression.Constant("#"), text);
    var ctor = typeof(string).GetConstructor(new[] { typeof(char), typeof(int) });
    Expression no = Expression.New(ctor, Expression.Constant('a'),
                                   Expression.Add(Expression.And(id, Expression.Constant(7)), Expression.Constant(1)));
    Expression body = Expression.Condition(Expression.GreaterThan(id, Expression.Constant(k)), yes, no);
    return Expression.Lambda<Func<Item, string>>(body, p).Compile();
  }

  static Func<int, int[]> EmitArrayMaker(int k) {
    var dm = new DynamicMethod("MakeArray" + k, typeof(int[]), new[] { typeof(int) }, typeof(BenchDynamic).Module);
    var il = dm.GetILGenerator();
    il.Emit(OpCodes.Ldarg_0);
    il.Emit(OpCodes.Ldc_I4, (k & 15) + 1);
    il.Emit(OpCodes.Add);
    il.Emit(OpCodes.Newarr, typeof(int));
    il.Emit(OpCodes.Ret);
    return (Func<int, int[]>)dm.CreateDelegate(typeof(Func<int, int[]>));
  }

  static int Main(string[] args) {
    int rounds = args.Length > 0 ? int.Parse(args[0]) : 2000;
    var items = new List<Item>();
    for (int i = 0; i < 64; ++i) items.Add(new Item(i, "item" + i));
    long acc = 0;
    for (int r = 0; r < rounds; ++r) {
      for (int e = 0; e < 4; ++e) {
        var f = CompileSelector(r * 4 + e);
        foreach (var it in items) acc += f(it).Length;
      }
      var make = EmitArrayMaker(r);
      for (int i = 0; i < 32; ++i) acc += make(i).Length;
      if ((r & 7) == 0) {
        var re = new Regex("(\\w+)#(\\d{" + (1 + (r & 3)) + ",})", RegexOptions.Compiled);
        foreach (var it in items) acc += re.IsMatch(it.Name + "#" + r) ? 1 : 0;
      }
      if ((r & 63) == 63) {
        GC.Collect();
        GC.WaitForPendingFinalizers();  // the dynamic methods' code is freed now
      }
    }
    Console.WriteLine("dynamic checksum " + acc);
    return 0;
  }
}
