// A C++ program as a user builds it outside memplace: global objects, a virtual call
// through a base class, and an exception thrown by one of the overrides and caught by type.
#include <stdexcept>

struct Shape {
  virtual ~Shape() {}
  virtual int area() const = 0;
};

struct Square : Shape {
  int side;
  explicit Square(int s) : side(s) {}
  int area() const override { return side * side; }
};

struct Rect : Shape {
  int width, height;
  Rect(int w, int h) : width(w), height(h) {}
  int area() const override {
    if (width < 0) throw std::runtime_error("negative width");
    return width * height;
  }
};

static Square square(3);
static Rect broken(-1, 2);
static Shape *shapes[] = {&square, &broken};
volatile int total, caught;

int main() {
  for (Shape *shape : shapes) {
    try {
      total = total + shape->area();
    } catch (const std::exception &) {
      caught = caught + 1;
    }
  }
  return caught == 1 && total == 9 ? 0 : 1;
}
