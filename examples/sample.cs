// A small program to profile: some calls, some allocations, an exception.
using System;
using System.Collections.Generic;

namespace SampleApp {
  class Order {
    public int Id;
    public decimal Amount;
    public Order(int id, decimal amount) { Id = id; Amount = amount; }
  }

  static class Program {
    static decimal Total(List<Order> orders) {
      decimal sum = 0;
      foreach (var o in orders) sum += o.Amount;
      return sum;
    }

    static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }

    static void Main() {
      var orders = new List<Order>();
      for (int i = 0; i < 5000; i++) orders.Add(new Order(i, i % 97));
      Console.WriteLine("orders: {0}, total: {1}", orders.Count, Total(orders));
      Console.WriteLine("fib(22) = {0}", Fib(22));
      try {
        throw new InvalidOperationException("demo");
      } catch (InvalidOperationException e) {
        Console.WriteLine("caught: {0}", e.Message);
      }
    }
  }
}
